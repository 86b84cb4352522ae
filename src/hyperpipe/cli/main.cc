#include <iostream>

#include "hyperpipe/cli/app.h"

int main(int argc, char** argv) {
  return hyperpipe::cli::run(argc, argv, std::cout, std::cerr);
}
