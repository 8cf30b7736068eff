/* Build helper: turn a file into a C array, so the built-in quickstart
** scenario is scenarios/quickstart.yaml itself.
** usage: fabsim-embed INPUT OUTPUT.c SYMBOL */
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s INPUT OUTPUT.c SYMBOL\n", argv[0]);
    return 2;
  }
  FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "w");
  if (!in || !out) {
    perror("fabsim-embed");
    return 1;
  }
  fprintf(out, "/* generated from %s */\nconst char %s[] = {", argv[1], argv[3]);
  int c, n = 0;
  while ((c = getc(in)) != EOF) fprintf(out, "%s%d,", n++ % 16 ? "" : "\n  ", c);
  fprintf(out, "\n  0};\n");
  fclose(in);
  return fclose(out) ? 1 : 0;
}
