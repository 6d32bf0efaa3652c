/* SPDX-License-Identifier: MIT */ /* settings.c: being written. */
