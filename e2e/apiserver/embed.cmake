# Turns the file IN into a C source OUT defining fg__types_json[] (NUL-terminated) and its length.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
file(WRITE ${OUT} "/* Generated from types.json by embed.cmake; do not edit. */\n#include <stddef.h>\n"
  "extern const char fg__types_json[];\nextern const size_t fg__types_json_len;\n"
  "const char fg__types_json[] = {${bytes}0x00};\nconst size_t fg__types_json_len = ${len};\n")
