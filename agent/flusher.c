/* SPDX-License-Identifier: MIT */ /* flusher.c: being written. */
