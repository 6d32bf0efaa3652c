/* SPDX-License-Identifier: MIT */ /* interpose.c: being written. */
