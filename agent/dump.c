/* SPDX-License-Identifier: MIT */ /* dump.c: being written. */
