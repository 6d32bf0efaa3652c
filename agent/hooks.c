/* SPDX-License-Identifier: MIT */ /* hooks.c: being written. */
