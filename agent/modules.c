/* SPDX-License-Identifier: MIT */ /* modules.c: being written. */
