#include "reports/html_page.hpp"

#include <fstream>
#include <sstream>

#include "reports/claims.hpp"
#include "reports/output_files.hpp"
#include "reports/stats_intervals.hpp"

namespace exmy::reports {

namespace {

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Inline markup of one line: **bold**, `code`, ![cap](img), [text](link); the rest escaped.
std::string inline_md(const std::string& s, const std::string& base_dir,
                      const std::string& link_prefix) {
  std::string o;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, 2, "**") == 0) {
      const std::size_t e = s.find("**", i + 2);
      if (e != std::string::npos) {
        o += "<b>" + inline_md(s.substr(i + 2, e - i - 2), base_dir, link_prefix) + "</b>";
        i = e + 2;
        continue;
      }
    }
    if (s[i] == '`') {
      const std::size_t e = s.find('`', i + 1);
      if (e != std::string::npos) {
        o += "<code>" + escape(s.substr(i + 1, e - i - 1)) + "</code>";
        i = e + 1;
        continue;
      }
    }
    const bool image = s.compare(i, 2, "![") == 0;
    if (image || s[i] == '[') {
      const std::size_t start = i + (image ? 2 : 1);
      const std::size_t close = s.find("](", start);
      const std::size_t end = close == std::string::npos ? close : s.find(')', close + 2);
      if (close != std::string::npos && end != std::string::npos) {
        const std::string text = s.substr(start, close - start);
        const std::string target = s.substr(close + 2, end - close - 2);
        if (image) {
          const std::string png = read_all(base_dir + "/" + target);
          if (!png.empty()) {
            o += "<figure><img alt=\"" + escape(text) + "\" src=\"data:image/png;base64," +
                 base64(png) + "\"><figcaption>" + escape(text) + "</figcaption></figure>";
          } else {
            o += "<i>(" + escape(text) + ": " + escape(target) + " missing)</i>";
          }
        } else {
          const bool absolute = target.find("://") != std::string::npos || target[0] == '#';
          o += "<a href=\"" + escape(absolute ? target : link_prefix + target) + "\">" +
               inline_md(text, base_dir, link_prefix) + "</a>";
        }
        i = end + 1;
        continue;
      }
    }
    o += escape(std::string(1, s[i]));
    ++i;
  }
  return o;
}

std::vector<std::string> table_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      while (!cur.empty() && cur.back() == ' ') cur.pop_back();
      while (!cur.empty() && cur.front() == ' ') cur.erase(cur.begin());
      cells.push_back(cur);
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return cells;
}

}  // namespace

std::string base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o;
  o.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    o += t[v >> 18];
    o += t[(v >> 12) & 63];
    o += t[(v >> 6) & 63];
    o += t[v & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    o += t[v >> 18];
    o += t[(v >> 12) & 63];
    o += i + 1 < in.size() ? t[(v >> 6) & 63] : '=';
    o += '=';
  }
  return o;
}

std::string markdown_to_html(const std::string& md, const std::string& base_dir,
                             const std::string& link_prefix) {
  std::istringstream in(md);
  std::string line, html, para;
  bool in_list = false, in_table = false, table_head = false;
  auto flush_para = [&]() {
    if (!para.empty()) html += "<p>" + inline_md(para, base_dir, link_prefix) + "</p>\n";
    para.clear();
  };
  auto close_blocks = [&]() {
    flush_para();
    if (in_list) html += "</ul>\n";
    if (in_table) html += "</tbody></table>\n";
    in_list = in_table = false;
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      close_blocks();
      continue;
    }
    if (line[0] == '#') {
      close_blocks();
      std::size_t level = 0;
      while (level < line.size() && line[level] == '#') ++level;
      const std::string h = "h" + std::to_string(level < 6 ? level : 6);
      html += "<" + h + ">" + inline_md(line.substr(level + 1), base_dir, link_prefix) + "</" + h +
              ">\n";
    } else if (line.rfind("- ", 0) == 0) {
      flush_para();
      if (!in_list) html += "<ul>\n";
      in_list = true;
      html += "<li>" + inline_md(line.substr(2), base_dir, link_prefix) + "</li>\n";
    } else if (line[0] == '|') {
      flush_para();
      const auto cells = table_cells(line);
      const bool rule = !cells.empty() && cells[0].find("---") != std::string::npos;
      if (!in_table) {
        html += "<table><thead><tr>";
        for (const auto& c : cells) html += "<th>" + inline_md(c, base_dir, link_prefix) + "</th>";
        html += "</tr></thead><tbody>\n";
        in_table = true;
        table_head = true;  // the next line may be the |---| rule
      } else if (rule && table_head) {
        table_head = false;
      } else {
        table_head = false;
        html += "<tr>";
        for (const auto& c : cells) html += "<td>" + inline_md(c, base_dir, link_prefix) + "</td>";
        html += "</tr>\n";
      }
    } else {
      if (in_list || in_table) close_blocks();
      para += (para.empty() ? "" : " ") + line;
    }
  }
  close_blocks();
  return html;
}

std::string claims_html(const std::vector<Claim>& claims) {
  std::string h =
      "<table class=\"sortable\"><thead><tr><th>source</th><th>where</th><th>claim</th>"
      "<th>exmy measures</th><th>kind</th><th>value</th><th>95% interval</th><th>expected</th>"
      "<th>verdict</th><th>figure / data</th></tr></thead><tbody>\n";
  for (const auto& c : claims) {
    const std::string cls =
        c.verdict.rfind("reproduced", 0) == 0 || c.verdict.rfind("agrees", 0) == 0 ||
                c.verdict.rfind("consistent", 0) == 0
            ? "ok"
        : c.verdict.rfind("not computable", 0) == 0 || c.verdict.rfind("arithmetic", 0) == 0 ||
                c.verdict.rfind("inconclusive", 0) == 0
            ? "na"
            : "bad";
    h += "<tr class=\"" + cls + "\"><td>" + escape(c.source) + "</td><td>" + escape(c.where) +
         "</td><td>" + escape(c.claim) + "</td><td>" + escape(c.measured) + "</td><td>" +
         escape(c.kind) + "</td><td>" +
         (!c.has_value ? std::string("-")
          : c.has_ci   ? fmt_at(c.value, c.lo, c.hi)
                       : fmt_g(c.value, 4)) +
         "</td><td>" +
         (c.has_ci ? "[" + fmt_at(c.lo, c.lo, c.hi) + ", " + fmt_at(c.hi, c.lo, c.hi) + "]"
                   : std::string("-")) +
         "</td><td>" + escape(c.expected) + "</td><td>" + escape(c.verdict) + "</td><td>" +
         (c.link.empty() ? std::string("-")
                         : "<a href=\"" + escape(c.link) + "\">" + escape(c.link) + "</a>") +
         "</td></tr>\n";
  }
  return h + "</tbody></table>\n";
}

void write_report_html(const std::string& dir, const std::string& top_md,
                       const std::vector<SectionSummary>& ran, const std::vector<Claim>& claims) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>exmy "
      "report</title>\n"
      "<style>body{font-family:sans-serif;max-width:1300px;margin:auto;padding:1em;line-height:1.4}"
      "table{border-collapse:collapse;margin:0.5em 0;font-size:0.85em}"
      "th,td{border:1px solid #ccc;padding:3px 6px;vertical-align:top}"
      "th{background:#f0f0f0;cursor:pointer}tr.ok td:nth-child(9){background:#e3f6e3}"
      "tr.bad td:nth-child(9){background:#fbe3e3}tr.na td:nth-child(9){background:#f3f3f3}"
      "img{max-width:100%}figure{margin:1em 0}figcaption{font-size:0.85em;color:#444}"
      "code{background:#f4f4f4}</style>\n"
      "<script>function sortTable(th){const t=th.closest('table'),b=t.tBodies[0],"
      "i=[...th.parentNode.children].indexOf(th),asc=th.dataset.asc!=='1';th.dataset.asc="
      "asc?'1':'0';const rows=[...b.rows];const key=r=>{const s=r.cells[i].innerText;"
      "const n=parseFloat(s);return isNaN(n)?s:n};rows.sort((x,y)=>{const a=key(x),c=key(y);"
      "return (a<c?-1:a>c?1:0)*(asc?1:-1)});rows.forEach(r=>b.appendChild(r))}"
      "window.addEventListener('load',()=>document.querySelectorAll('table.sortable th')"
      ".forEach(th=>th.addEventListener('click',()=>sortTable(th))))</script>\n"
      "</head><body>\n<h1>exmy report</h1>\n<h2>Claims</h2>\n"
      "<p>Every computable claim of the source papers next to exmy's value, its 95% interval "
      "and a verdict; closed forms this report derives are listed as such, and arithmetic "
      "restatements are never called reproductions. Click a column header to sort.</p>\n" +
      markdown_to_html(claim_kinds_md(), dir, "") + claims_html(claims);
  h += markdown_to_html(top_md, dir, "");
  for (const auto& s : ran) {
    const std::string md = read_all(dir + "/" + s.key + "/index.md");
    h += "<hr>\n<section id=\"" + s.key + "\">\n" +
         markdown_to_html(md, dir + "/" + s.key, s.key + "/") + "</section>\n";
  }
  h += "</body></html>\n";
  write_file_atomic(dir + "/report.html", h);
}

}  // namespace exmy::reports
