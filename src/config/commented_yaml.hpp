// The option table written out as a YAML config file in which every key stands commented out at its
// default, under its help text: the packaged /etc/sluice/sluice.yaml, generated from the same table
// the flags come from, so it cannot drift from them. Pure: no I/O, no state.
#pragma once

#include <string>
#include <string_view>

#include "config/option_table.hpp"

namespace sluice::config {

// `title` opens the file as comment lines. Each scalar or list option is written as its help (one
// comment line) and `# name: <default>`; removing the "# " of that line leaves YAML that the table
// reads back as the default. A structured option (a list of maps) is described, not exemplified.
std::string commented_yaml(const option_table& table, std::string_view title);

// A default as a YAML scalar: plain where YAML reads it back as the same string, else
// double-quoted with `"` and `\` escaped.
std::string yaml_scalar(std::string_view text);

}  // namespace sluice::config
