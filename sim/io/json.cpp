// The JSON reader of json.hpp: recursive descent over RFC 8259's grammar.
#include "sim/io/json.hpp"

#include <cstdlib>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"

namespace exmy::io {
namespace {

class Parser {
 public:
  Parser(std::string_view t, const std::string& src) : t_(t), src_(src) {}
  Json document() {
    Json v = value(0);
    ws();
    if (i_ != t_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(src_ + ": invalid JSON at byte " + std::to_string(i_) + ": " + what);
  }
  void ws() {
    while (i_ < t_.size() &&
           (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) {
      ++i_;
    }
  }
  bool eat(char c) {
    ws();
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(std::string_view w) {
    if (t_.substr(i_, w.size()) == w) {
      i_ += w.size();
      return true;
    }
    return false;
  }
  std::string string() {
    expect('"');
    std::string s;
    while (true) {
      if (i_ >= t_.size()) fail("unterminated string");
      const char c = t_[i_++];
      if (c == '"') return s;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        s += c;
        continue;
      }
      if (i_ >= t_.size()) fail("unterminated escape");
      const char e = t_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          s += e;
          break;
        case 'b':
          s += '\b';
          break;
        case 'f':
          s += '\f';
          break;
        case 'n':
          s += '\n';
          break;
        case 'r':
          s += '\r';
          break;
        case 't':
          s += '\t';
          break;
        case 'u': {
          if (i_ + 4 > t_.size()) fail("short \\u escape");
          const unsigned long cp = std::strtoul(std::string(t_.substr(i_, 4)).c_str(), nullptr, 16);
          i_ += 4;
          if (cp < 0x80) {
            s += static_cast<char>(cp);
          } else if (cp < 0x800) {
            s += static_cast<char>(0xC0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            s += static_cast<char>(0xE0 | (cp >> 12));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            s += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          fail("unknown escape");
      }
    }
  }
  Json value(int depth) {
    if (depth > 64) fail("nested deeper than 64");
    ws();
    if (i_ >= t_.size()) fail("unexpected end");
    Json v;
    const char c = t_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Json::Kind::object;
      if (eat('}')) return v;
      do {
        ws();
        std::string k = string();
        for (const auto& f : v.keys) {
          if (f == k) fail("duplicate key '" + k + "'");
        }
        expect(':');
        Json member = value(depth + 1);
        v.keys.push_back(std::move(k));
        v.values.push_back(std::move(member));
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.kind = Json::Kind::array;
      if (eat(']')) return v;
      do {
        v.items.push_back(value(depth + 1));
      } while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Json::Kind::string;
      v.text = string();
    } else if (word("true")) {
      v.kind = Json::Kind::boolean;
      v.text = "true";
    } else if (word("false")) {
      v.kind = Json::Kind::boolean;
      v.text = "false";
    } else if (word("null")) {
      v.kind = Json::Kind::null;
    } else {
      const std::size_t start = i_;
      while (i_ < t_.size() &&
             std::string_view("+-0123456789.eE").find(t_[i_]) != std::string_view::npos) {
        ++i_;
      }
      if (i_ == start) fail("expected a value");
      v.kind = Json::Kind::number;
      v.text = std::string(t_.substr(start, i_ - start));
    }
    return v;
  }

  std::string_view t_;
  const std::string& src_;
  std::size_t i_ = 0;
};

}  // namespace

const Json* Json::find(std::string_view key) const {
  if (kind != Kind::object) return nullptr;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) return &values[i];
  }
  return nullptr;
}
const Json& Json::at(std::string_view key, const std::string& what) const {
  const Json* j = find(key);
  if (!j) throw InputError(what + ": missing field '" + std::string(key) + "'");
  return *j;
}
std::uint64_t Json::u64(const std::string& what) const {
  if (kind != Kind::number) throw InputError(what + ": expected a number");
  return number::parse_u64(text, what, ~std::uint64_t{0}, false);
}
double Json::f64(const std::string& what) const {
  if (kind != Kind::number) throw InputError(what + ": expected a number");
  return number::parse_f64(text, what);
}
bool Json::boolean(const std::string& what) const {
  if (kind != Kind::boolean) throw InputError(what + ": expected true or false");
  return text == "true";
}
const std::string& Json::str(const std::string& what) const {
  if (kind != Kind::string) throw InputError(what + ": expected a string");
  return text;
}

Json parse_json(std::string_view text, const std::string& source) {
  return Parser(text, source).document();
}

}  // namespace exmy::io
