#!/bin/sh
# Writes help2man's include file: each subcommand's --help as a section of sluice(1).
# Usage: man-sections.sh SLUICE_BINARY OUT_FILE
set -eu
bin=$1
out=$2
{
  for cmd in serve sim flood; do
    upper=$(printf '%s' "$cmd" | tr '[:lower:]' '[:upper:]')
    printf '[SLUICE %s]\n.nf\n' "$upper"
    # Roff: a backslash is written \e, and a line may not start with a dot or a quote.
    # The build tree's path of the binary is not the installed one.
    "$bin" "$cmd" --help | sed -e "s#$bin#sluice#g" -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    printf '.fi\n\n'
  done
  printf '[FILES]\n.TP\n/etc/sluice/sluice.yaml\nthe config: every option commented out at its default\n'
  printf '.TP\n/etc/default/sluice\nthe service'"'"'s environment: the upstream'"'"'s key (OPENAI_API_KEY)\n'
  printf '[SEE ALSO]\nThe guides under /usr/share/doc/sluice/docs/.\n'
} > "$out"
