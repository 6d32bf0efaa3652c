/* SPDX-License-Identifier: MIT */ /* symbols.c: being written. */
