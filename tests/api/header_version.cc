// SPDX-License-Identifier: MIT
// The same check as header_version.c, compiled as C++11 (the header is for
// C++ programs too).
#include "header_version.c"
