/* SPDX-License-Identifier: MIT */ /* agent.c: being written. */
