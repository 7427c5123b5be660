/* Every layer's test and fuzz hooks (src/LAYER/testing.h: hidden in
 * libptreg.so, reached through the static library the tests link), for the
 * tests' and fuzzers' one include. */
#ifndef PTREG_TESTS_HOOKS_H
#define PTREG_TESTS_HOOKS_H

#include "core/testing.h"
#include "io/testing.h"
#include "nn/testing.h"
#include "pair/testing.h"
#include "feat/testing.h"
#include "reg/testing.h"
#include "apt/testing.h"
#include "tune/testing.h"

#endif
