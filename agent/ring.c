/* SPDX-License-Identifier: MIT */ /* ring.c: being written. */
