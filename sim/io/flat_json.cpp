#include "sim/io/flat_json.hpp"

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"

namespace exmy::io {

namespace {

class Parser {
 public:
  Parser(std::string_view s, const std::string& source) : s_(s), source_(source) {}

  std::map<std::string, JsonValue> object() {
    std::map<std::string, JsonValue> out;
    ws();
    expect('{');
    ws();
    if (peek() == '}') {
      ++i_;
    } else {
      for (;;) {
        ws();
        if (peek() != '"') bad("expected a \"key\"");
        std::string key = string();
        ws();
        expect(':');
        ws();
        JsonValue v = value();
        if (!out.emplace(key, std::move(v)).second) bad("\"" + key + "\" given twice");
        ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        break;
      }
    }
    ws();
    if (i_ != s_.size()) bad("trailing characters after the object");
    return out;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw InputError(source_ + ": malformed JSON at byte " + std::to_string(i_) + ": " + what);
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  void expect(char c) {
    if (peek() != c || i_ >= s_.size()) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  bool literal(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) bad("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) bad("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) bad("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (s_.size() - i_ < 4) bad("short \\u escape");
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            cp <<= 4;
            if (h >= '0' && h <= '9')
              cp |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
              cp |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
              cp |= static_cast<unsigned>(h - 'A' + 10);
            else
              bad("bad \\u escape");
          }
          // Surrogate pairs never occur in what exmy writes (json_string escapes only control
          // characters); a lone surrogate is not a character.
          if (cp >= 0xD800 && cp <= 0xDFFF) bad("surrogate in a \\u escape");
          utf8(out, cp);
          break;
        }
        default:
          bad("bad escape");
      }
    }
  }
  // RFC 8259 number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  std::string number() {
    const std::size_t from = i_;
    if (peek() == '-') ++i_;
    if (peek() == '0') {
      ++i_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++i_;
    } else {
      bad("expected a value");
    }
    if (peek() == '.') {
      ++i_;
      if (!(peek() >= '0' && peek() <= '9')) bad("expected digits after '.'");
      while (peek() >= '0' && peek() <= '9') ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      if (!(peek() >= '0' && peek() <= '9')) bad("expected exponent digits");
      while (peek() >= '0' && peek() <= '9') ++i_;
    }
    return std::string(s_.substr(from, i_ - from));
  }
  JsonValue value() {
    JsonValue v;
    const char c = peek();
    if (c == '"') {
      v.kind = JsonValue::Kind::string;
      v.text = string();
    } else if (literal("true")) {
      v.kind = JsonValue::Kind::boolean;
      v.text = "true";
    } else if (literal("false")) {
      v.kind = JsonValue::Kind::boolean;
      v.text = "false";
    } else if (literal("null")) {
      v.kind = JsonValue::Kind::null;
    } else if (c == '[') {
      ++i_;
      v.kind = JsonValue::Kind::array;
      ws();
      if (peek() == ']') {
        ++i_;
        return v;
      }
      for (;;) {
        ws();
        if (literal("null")) {
          v.items.emplace_back("null");
        } else {
          v.items.push_back(number());
        }
        ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        break;
      }
    } else if (c == '{') {
      bad("nested objects are not expected");
    } else {
      v.kind = JsonValue::Kind::number;
      v.text = number();
    }
    return v;
  }

  std::string_view s_;
  const std::string& source_;
  std::size_t i_ = 0;
};

}  // namespace

FlatJson::FlatJson(std::string_view text, std::string source) : source_(std::move(source)) {
  fields_ = Parser(text, source_).object();
}

const JsonValue& FlatJson::value(const std::string& key) const {
  const auto it = fields_.find(key);
  if (it == fields_.end()) throw InputError(source_ + ": missing \"" + key + "\"");
  return it->second;
}

const JsonValue& FlatJson::typed(const std::string& key, JsonValue::Kind kind,
                                 const char* what) const {
  const JsonValue& v = value(key);
  if (v.kind != kind) throw InputError(source_ + ": \"" + key + "\" is not " + what);
  return v;
}

std::string FlatJson::str(const std::string& key) const {
  return typed(key, JsonValue::Kind::string, "a string").text;
}

bool FlatJson::boolean(const std::string& key) const {
  return typed(key, JsonValue::Kind::boolean, "true or false").text == "true";
}

std::uint64_t FlatJson::u64(const std::string& key, std::uint64_t max) const {
  return number::parse_u64(typed(key, JsonValue::Kind::number, "a number").text,
                           source_ + ": \"" + key + "\"", max, false);
}

std::int64_t FlatJson::i64(const std::string& key, std::int64_t lo, std::int64_t hi) const {
  return number::parse_i64(typed(key, JsonValue::Kind::number, "a number").text,
                           source_ + ": \"" + key + "\"", lo, hi);
}

double FlatJson::f64(const std::string& key) const {
  return number::parse_f64(typed(key, JsonValue::Kind::number, "a number").text,
                           source_ + ": \"" + key + "\"");
}

float FlatJson::f32(const std::string& key) const {
  return number::parse_f32(typed(key, JsonValue::Kind::number, "a number").text,
                           source_ + ": \"" + key + "\"");
}

}  // namespace exmy::io
