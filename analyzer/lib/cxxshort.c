/* SPDX-License-Identifier: MIT */
/*
 * cxxshort.c - the short form of demangled C++ names (--demangle=simple's),
 * a string function apart from reading symbols; see symbols.h.
 */
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

/* ---- short C++ names -------------------------------------------------------------- */

/* Deeper nesting than this is not shortened (the name stays whole). */
#define SHORT_DEPTH 256

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$';
}

/* The operator after the keyword "operator" at s (its length), or 0 for a
 * conversion operator or none.  Longest first: "<<=" before "<<" and "<". */
static size_t op_token(const char *s)
{
	static const char *const ops[] = {
	    " delete[]", " new[]", " co_await", " delete", " new", "<<=", ">>=", "<=>", "->*",
	    "()",	 "[]",	   "<<",	">>",	   "<=",   ">=",  "->",	 "==",	"!=",
	    "&&",	 "||",	   "++",	"--",	   "+=",   "-=",  "*=",	 "/=",	"%=",
	    "&=",	 "|=",	   "^=",	"<",	   ">",	   "+",	  "-",	 "*",	"/",
	    "%",	 "^",	   "&",		"|",	   "~",	   "!",	  "=",	 ","};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i]);

		if (!strncmp(s, ops[i], n) && (ops[i][0] != ' ' || !ident_char(s[n])))
			return n;
	}
	return 0;
}

/* Whether the keyword "operator" starts at s + i (not inside a word). */
static int at_operator(const char *s, size_t i)
{
	return (i == 0 || !ident_char(s[i - 1])) && !strncmp(s + i, "operator", 8) &&
	       !ident_char(s[i + 8]);
}

/* Past the group that opens at s[i] ('(', '<', '[' or '{') and its
 * matching closer, or 0 when it does not close or nests too deep.  A '<'
 * or '>' that cannot be a bracket (a comparison in an expression, "->",
 * an operator's name) does not count. */
static size_t group_end(const char *s, size_t i)
{
	char want[SHORT_DEPTH];
	size_t depth = 0;

	for (; s[i]; i++) {
		char c = s[i];

		if (at_operator(s, i)) {
			i += 8;
			i += op_token(s + i);
			i--;
			continue;
		}
		if (c == '-' && s[i + 1] == '>') {
			i++;
			continue;
		}
		if (c == '(' || c == '<' || c == '[' || c == '{') {
			if (depth == SHORT_DEPTH)
				return 0;
			want[depth++] = c == '(' ? ')' : c == '<' ? '>' : c == '[' ? ']' : '}';
		} else if (c == ')' || c == ']' || c == '}' || c == '>') {
			size_t d = depth;

			while (d && want[d - 1] != c && want[d - 1] == '>')
				d--;
			if (!d || want[d - 1] != c)
				continue; /* a comparison, or a stray closer */
			depth = d - 1;
			if (!depth)
				return i + 1;
		}
	}
	return 0;
}

/* What may follow a function's parameter list and belongs to it. */
static size_t qualifier_len(const char *s)
{
	static const char *const q[] = {"const", "volatile", "restrict", "noexcept", "&&", "&"};

	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		size_t n = strlen(q[i]);

		if (!strncmp(s, q[i], n) && (q[i][0] == '&' || !ident_char(s[n])))
			return n;
	}
	return 0;
}

/* Whether only qualifiers and "[clone ...]" follow s: the end of the
 * outermost function's name. */
static int at_tail(const char *s)
{
	size_t i = 0, n;

	while (s[i]) {
		if (s[i] == ' ') {
			i++;
		} else if ((n = qualifier_len(s + i)) != 0) {
			i += n;
		} else if (!strncmp(s + i, "[clone ", 7)) {
			n = group_end(s, i);
			if (!n)
				return 0;
			i = n;
		} else {
			return 0;
		}
	}
	return 1;
}

/* Copies s[i, end) to o without its template argument lists; o's end. */
static size_t copy_no_targs(const char *s, size_t i, size_t end, char *o, size_t oi)
{
	while (i < end) {
		size_t e;

		if (at_operator(s, i)) {
			/* group_end skipped the same token: it ends by end,
			 * which bounds it all the same. */
			e = i + 8 + op_token(s + i + 8);
			if (e > end)
				e = end;
			memcpy(o + oi, s + i, e - i);
			oi += e - i;
			i = e;
		} else if (s[i] == '<' && (e = group_end(s, i)) != 0 && e <= end) {
			i = e;
		} else {
			o[oi++] = s[i++];
		}
	}
	return oi;
}

/* Names before the function's that the demangler writes as words. */
static const char *const special_prefix[] = {
    "non-virtual thunk to ",  "virtual thunk to ",	"covariant return thunk to ",
    "transaction clone for ", "TLS init function for ", "TLS wrapper function for "};

char *ta_cxx_short(const char *name, int level)
{
	const int keep_params = level >= 1, keep_targs = level >= 2, keep_all_targs = level >= 3;
	size_t len = strlen(name), i = 0, oi = 0, pre = 0, e;
	char *o = malloc(len + 1);
	int conv = 0; /* in a conversion operator's type, where spaces belong */

	if (!o)
		return NULL;
	for (size_t k = 0; k < sizeof(special_prefix) / sizeof(special_prefix[0]); k++) {
		size_t n = strlen(special_prefix[k]);

		if (!strncmp(name, special_prefix[k], n)) {
			memcpy(o, name, n);
			i = oi = pre = n;
			break;
		}
	}
	while (name[i]) {
		char c = name[i];

		if (at_operator(name, i)) {
			memcpy(o + oi, name + i, 8);
			oi += 8;
			i += 8;
			if (name[i] == '"' && name[i + 1] == '"') {
				/* A literal operator: operator"" _km. */
				o[oi++] = '"';
				o[oi++] = '"';
				i += 2;
				if (name[i] == ' ')
					o[oi++] = name[i++];
				while (ident_char(name[i]))
					o[oi++] = name[i++];
			} else if ((e = op_token(name + i)) != 0) {
				memcpy(o + oi, name + i, e);
				oi += e;
				i += e;
			} else if (name[i] == ' ') {
				conv = 1;
				o[oi++] = name[i++];
			}
			continue;
		}
		switch (c) {
		case '(':
			if (!strncmp(name + i, "(anonymous namespace)", 21)) {
				memcpy(o + oi, name + i, 21);
				oi += 21;
				i += 21;
				continue;
			}
			if (!(e = group_end(name, i)))
				goto whole;
			if (keep_params && at_tail(name + e)) {
				if (oi == pre)
					goto whole; /* a list without a name */
				oi = copy_no_targs(name, i, e, o, oi);
			}
			i = e;
			conv = 0;
			continue;
		case '<':
			if (!(e = group_end(name, i)))
				goto whole;
			/* The function's own template arguments (those of the
			 * name the last parameter list follows), one level. */
			if (keep_targs) {
				size_t pe = name[e] == '(' ? group_end(name, e) : 0;

				if (keep_all_targs || (pe && at_tail(name + pe))) {
					/* "operator< <int>" keeps its space. */
					if (oi && o[oi - 1] == '<' && i && name[i - 1] == ' ')
						o[oi++] = ' ';
					o[oi++] = '<';
					oi = copy_no_targs(name, i + 1, e - 1, o, oi);
					while (o[oi - 1] == ' ')
						oi--; /* "vector<int> >": the space went with the
							 '>' */
					o[oi++] = '>';
				}
			}
			i = e;
			continue;
		case '{':
			/* {lambda(int)#1}, {unnamed type#1}: what tells them apart. */
			if (!(e = group_end(name, i)))
				goto whole;
			oi = copy_no_targs(name, i, e, o, oi);
			i = e;
			continue;
		case '[':
			if (!(e = group_end(name, i)))
				goto whole;
			/* An ABI tag says nothing a reader needs; a clone is
			 * another function (a .cold part). */
			if (strncmp(name + i, "[abi:", 5)) {
				memcpy(o + oi, name + i, e - i);
				oi += e - i;
			}
			i = e;
			continue;
		case ' ':
			if (conv) {
				o[oi++] = name[i++];
				continue;
			}
			/* "operator< <int>": the space keeps "<<" from being read. */
			if (name[i + 1] == '<') {
				i++;
				continue;
			}
			if (!strncmp(name + i + 1, "[clone ", 7)) {
				o[oi++] = name[i++];
				continue;
			}
			if ((e = qualifier_len(name + i + 1)) != 0) {
				if (keep_params && at_tail(name + i)) {
					memcpy(o + oi, name + i, e + 1);
					oi += e + 1;
				}
				i += e + 1;
				continue;
			}
			/* What came before was the return type. */
			oi = pre;
			i++;
			continue;
		default:
			o[oi++] = name[i++];
		}
	}
	while (oi > pre && o[oi - 1] == ' ')
		oi--;
	if (oi == pre)
		goto whole;
	o[oi] = '\0';
	return o;
whole:
	memcpy(o, name, len + 1);
	return o;
}
