// The report's HTML page: base64 (RFC 4648 test vectors) and the Markdown subset it renders.
#include <catch2/catch.hpp>
#include <string>

#include "reports/html_page.hpp"

using namespace exmy::reports;

TEST_CASE("base64 follows RFC 4648's test vectors", "[html]") {
  REQUIRE(base64("") == "");
  REQUIRE(base64("f") == "Zg==");
  REQUIRE(base64("fo") == "Zm8=");
  REQUIRE(base64("foo") == "Zm9v");
  REQUIRE(base64("foob") == "Zm9vYg==");
  REQUIRE(base64("fooba") == "Zm9vYmE=");
  REQUIRE(base64("foobar") == "Zm9vYmFy");
  REQUIRE(base64(std::string("\xff\x00\x80", 3)) == "/wCA");
}

TEST_CASE("markdown_to_html: headings, lists, tables, links, escaping", "[html]") {
  const std::string md =
      "# Title <x>\n\nSome **bold** and `code` text\ncontinued.\n\n- item [a](a.csv)\n- two\n\n"
      "| h1 | h2 |\n|---|---|\n| 1 & 2 | [b](b.csv) |\n";
  const std::string h = markdown_to_html(md, "/nonexistent", "sec/");
  REQUIRE(h.find("<h1>Title &lt;x&gt;</h1>") != std::string::npos);
  REQUIRE(h.find("<p>Some <b>bold</b> and <code>code</code> text continued.</p>") !=
          std::string::npos);
  REQUIRE(h.find("<li>item <a href=\"sec/a.csv\">a</a></li>") != std::string::npos);
  REQUIRE(h.find("<th>h1</th><th>h2</th>") != std::string::npos);
  REQUIRE(h.find("<td>1 &amp; 2</td><td><a href=\"sec/b.csv\">b</a></td>") != std::string::npos);
  REQUIRE(h.find("---") == std::string::npos);  // the rule row is not a data row
  // A missing figure is named, not silently dropped.
  REQUIRE(markdown_to_html("![cap](f.png)\n", "/nonexistent", "").find("f.png missing") !=
          std::string::npos);
}
