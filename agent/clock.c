/* SPDX-License-Identifier: MIT */ /* clock.c: being written. */
