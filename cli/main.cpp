// exmy: command-line entry point; dispatches to one subcommand per file (cli/cmd_*.cpp).
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::printf("usage: exmy <table|cast|...> ...\n");
    return argc < 2 ? 2 : 0;
  }
  std::fprintf(stderr, "exmy: unknown command '%s'\n", argv[1]);
  return 2;
}
