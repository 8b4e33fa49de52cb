// A strict reader of the Prometheus text exposition format 0.0.4, for tests: every line must be a # HELP or
// # TYPE comment or a sample `name{label="value",...} number`; label values are unescaped; a sample's family
// must have been TYPEd before it. Violations fail the test that parses.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace humus::test {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromText {
  std::map<std::string, std::string> types;  // family → counter, gauge, histogram
  std::map<std::string, std::string> help;
  std::vector<PromSample> samples;

  // The value of the one sample with this name whose labels include `match`; fails the test unless exactly
  // one.
  double value(const std::string& name, const std::map<std::string, std::string>& match) const {
    const PromSample* found = nullptr;
    int n = 0;
    for (const PromSample& s : samples) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : match) {
        auto it = s.labels.find(k);
        if (it == s.labels.end() || it->second != v) all = false;
      }
      if (all) {
        found = &s;
        ++n;
      }
    }
    EXPECT_EQ(n, 1) << name;
    return found == nullptr ? -1 : found->value;
  }
};

inline bool is_name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

inline PromText parse_prometheus(const std::string& text) {
  PromText out;
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "the text must end with a newline";
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eol = text.find('\n', pos);
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const std::string rest = line.substr(7);
      const size_t sp = rest.find(' ');
      EXPECT_NE(sp, std::string::npos) << line;
      const std::string family = rest.substr(0, sp), what = rest.substr(sp + 1);
      if (line[2] == 'T') {
        EXPECT_TRUE(what == "counter" || what == "gauge" || what == "histogram") << line;
        EXPECT_FALSE(out.types.count(family)) << "TYPE twice: " << line;
        out.types[family] = what;
      } else {
        out.help[family] = what;
      }
      continue;
    }
    EXPECT_NE(line[0], '#') << "unknown comment: " << line;
    PromSample s;
    size_t i = 0;
    while (i < line.size() && is_name_char(line[i], i == 0)) ++i;
    s.name = line.substr(0, i);
    EXPECT_FALSE(s.name.empty()) << line;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t start = i;
        while (i < line.size() && is_name_char(line[i], i == start)) ++i;
        const std::string label = line.substr(start, i - start);
        EXPECT_FALSE(label.empty()) << line;
        EXPECT_TRUE(i + 1 < line.size() && line[i] == '=' && line[i + 1] == '"') << line;
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\') {
            ++i;
            EXPECT_LT(i, line.size()) << line;
            if (line[i] == 'n')
              value += '\n';
            else if (line[i] == '\\' || line[i] == '"')
              value += line[i];
            else
              ADD_FAILURE() << "bad escape in " << line;
          } else {
            value += line[i];
          }
          ++i;
        }
        EXPECT_LT(i, line.size()) << "unterminated label value: " << line;
        ++i;  // the closing quote
        EXPECT_FALSE(s.labels.count(label)) << "label twice: " << line;
        s.labels[label] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      EXPECT_LT(i, line.size()) << line;
      ++i;  // '}'
    }
    EXPECT_TRUE(i < line.size() && line[i] == ' ') << line;
    const std::string number = line.substr(i + 1);
    char* end = nullptr;
    s.value = number == "+Inf" ? HUGE_VAL : std::strtod(number.c_str(), &end);
    if (number != "+Inf") {
      EXPECT_TRUE(end != nullptr && *end == '\0' && !number.empty()) << line;
    }
    // The family: the name itself, or a histogram's name without _bucket/_sum/_count.
    std::string family = s.name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string sfx(suffix);
      if (!out.types.count(family) && family.size() > sfx.size() &&
          family.compare(family.size() - sfx.size(), sfx.size(), sfx) == 0) {
        const std::string base = family.substr(0, family.size() - sfx.size());
        if (out.types.count(base) && out.types[base] == "histogram") family = base;
      }
    }
    EXPECT_TRUE(out.types.count(family)) << "sample before its TYPE: " << line;
    out.samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace humus::test
