/* SPDX-License-Identifier: MIT */ /* dumpfile.c: being written. */
