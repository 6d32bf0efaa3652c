// SPDX-License-Identifier: MIT
// every_macro.c as C++11 (TA_ZONE is a scope object there).
#include "every_macro.c"
