/* SPDX-License-Identifier: MIT */ /* session.c: being written. */
