/* Architecture names: "sm_90a" -> compute capability 90 and suffix 'a'. */
#include <ctype.h>
#include <string.h>

#include "internal.h"

int tirx__arch_parse(const char *arch, char *suffix) {
  if (suffix) *suffix = 0;
  if (!arch || strncmp(arch, "sm_", 3) != 0) return -1;
  const char *p = arch + 3;
  int number = 0, digits = 0;
  for (; isdigit((unsigned char)*p) && digits < 4; p++, digits++) number = number * 10 + (*p - '0');
  char s = 0;
  if (*p == 'a' || *p == 'f') s = *p++;
  if (digits < 2 || *p != '\0') return -1;
  if (suffix) *suffix = s;
  return number;
}
