/*
 * Function names for XRay function ids.
 *
 * An XRay log names functions only by id. The ids are assigned by the
 * runtime, in the order of the instrumentation map (the xray_instr_map
 * section) that the compiler writes into the binary: 1 for the first
 * function address, one more for each new address. This module rebuilds
 * that numbering from the binary exactly as LLVM's InstrumentationMap does,
 * and names each function address from the symbol table, demangled; or it
 * reads the same map as `llvm-xray extract --symbolize` prints it (YAML).
 *
 * ELF64 little-endian, the parts we read (offsets in bytes):
 *   file header   0: "\x7f" "ELF", 4: class (2 = 64-bit), 5: data (1 = LE),
 *                 16: u16 type, 18: u16 machine, 40: u64 section header
 *                 offset, 58: u16 section header size (64), 60: u16 count,
 *                 62: u16 index of the section-name table
 *   section hdr   0: u32 name, 4: u32 type, 16: u64 addr, 24: u64 offset,
 *                 32: u64 size, 40: u32 link, 56: u64 entry size
 *   symbol (24)   0: u32 name, 4: u8 info (type low 4 bits, binding high),
 *                 8: u64 value, 16: u64 size
 *   rela (24)     0: u64 offset, 8: u64 info (type low 32 bits), 16: i64 addend
 *   sled (32)     0: u64 address, 8: u64 function, 16: u8 kind,
 *                 17: u8 always-instrument, 18: u8 version, 19..31 padding;
 *                 version >= 2: address is relative to the sled's own
 *                 address, function to the sled's address + 8
 * Source: llvm/lib/XRay/InstrumentationMap.cpp; the ELF-64 Object File Format.
 *
 * Where we knowingly depart from LLVM:
 * - Relocations: only the RELATIVE ones of executables and shared objects
 *   (x86-64, AArch64, PPC64, RISC-V, LoongArch) fill sled fields that are 0
 *   in the file; relocatable objects are read without relocations.
 * - Unknown sled kinds are accepted (LLVM rejects the map).
 * - A name is taken from .symtab, else .dynsym (LLVM asks llvm-symbolizer,
 *   which prefers DWARF); among symbols at one address a global one wins.
 *   Names of 4096 bytes or more are not demangled.
 * - YAML: one sled per line in flow style, as llvm-xray prints it; block
 *   style is not read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"
#include "reader.h"

/* The C++ runtime's demangler (libstdc++ / libc++abi). */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

enum {
	XS_SLED_SIZE = 32,
	XS_SHDR_SIZE = 64,
	XS_SYM_SIZE = 24,
	XS_RELA_SIZE = 24,
	XS_MAX_DEMANGLE = 4096,
	XS_MAX_ID = 0x0fffffff /* function ids are 28 bits in the log */
};

enum { SHT_SYMTAB_ = 2, SHT_RELA_ = 4, SHT_NOBITS_ = 8, SHT_DYNSYM_ = 11 };
enum { ET_EXEC_ = 2, ET_DYN_ = 3 };

/* One function of the map. */
struct xs_fn {
	uint32_t id;   /* XRay function id */
	uint32_t name; /* offset of its name in the name arena + 1; 0 = unknown */
	uint64_t addr; /* function address */
};

struct xray_symbols {
	struct xs_fn *fns; /* sorted by id, ids unique */
	size_t n, cap;
	char *names;       /* NUL-terminated names */
	size_t names_len, names_cap;
	uint32_t max_id;
};

/* A section header, as read. */
struct xs_sec {
	uint32_t name, type, link;
	uint64_t addr, off, size, entsize;
};

/* The ELF file: bounds for every section read. */
struct xs_elf {
	const uint8_t *p;
	size_t n;
	uint16_t type, machine;
	uint64_t shoff;
	uint32_t shnum, shstrndx;
};

/* A function symbol. */
struct xs_sym {
	uint64_t value, size;
	uint32_t name; /* offset in the string table */
	uint8_t rank;  /* 0 global, 1 weak, 2 other: lower wins at one address */
};

/* ---- the result -------------------------------------------------------- */

static int xs_push(struct xray_symbols *s, uint32_t id, uint64_t addr)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct xs_fn *f = realloc(s->fns, cap * sizeof(*f));

		if (f == NULL)
			return -1;
		s->fns = f;
		s->cap = cap;
	}
	s->fns[s->n].id = id;
	s->fns[s->n].addr = addr;
	s->fns[s->n].name = 0;
	s->n++;
	if (id > s->max_id)
		s->max_id = id;
	return 0;
}

/* Copies a name of n bytes into the arena; returns its offset + 1, 0 when out of memory. */
static uint32_t xs_name_put(struct xray_symbols *s, const char *name, size_t n)
{
	size_t off = s->names_len;

	if (n + 1 > s->names_cap - s->names_len) {
		size_t cap = s->names_cap ? s->names_cap : 4096;
		char *p;

		while (n + 1 > cap - s->names_len)
			cap *= 2;
		if (cap > UINT32_MAX || (p = realloc(s->names, cap)) == NULL)
			return 0;
		s->names = p;
		s->names_cap = cap;
	}
	memcpy(s->names + off, name, n);
	s->names[off + n] = '\0';
	s->names_len += n + 1;
	return (uint32_t)off + 1;
}

/* Stores a symbol name, demangled when it is a C++ one. Returns as xs_name_put. */
static uint32_t xs_name_demangled(struct xray_symbols *s, const char *name, size_t n)
{
	char *dm;
	int status = -1;
	uint32_t off;

	if (n < 2 || n >= XS_MAX_DEMANGLE || name[0] != '_' || name[1] != 'Z')
		return xs_name_put(s, name, n);
	dm = __cxa_demangle(name, NULL, NULL, &status);
	if (dm == NULL || status != 0) {
		free(dm);
		return xs_name_put(s, name, n);
	}
	off = xs_name_put(s, dm, strlen(dm));
	free(dm);
	return off;
}

void xray_symbols_free(struct xray_symbols *s)
{
	if (s == NULL)
		return;
	free(s->fns);
	free(s->names);
	free(s);
}

const char *xray_symbols_name(const struct xray_symbols *s, uint32_t id)
{
	size_t lo = 0, hi = s ? s->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->fns[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < (s ? s->n : 0) && s->fns[lo].id == id && s->fns[lo].name != 0)
		return s->names + s->fns[lo].name - 1;
	return NULL;
}

uint32_t xray_symbols_max_id(const struct xray_symbols *s)
{
	return s ? s->max_id : 0;
}

/* ---- ELF ------------------------------------------------------------------ */

static int xs_elf_open(struct xs_elf *e, const uint8_t *p, size_t n, const char **why)
{
	uint32_t shnum, shstrndx;

	e->p = p;
	e->n = n;
	if (n < 64 || memcmp(p, "\x7f" "ELF", 4) != 0) {
		*why = "not an ELF file";
		return -1;
	}
	if (p[4] != 2 || p[5] != 1) {
		*why = "not a 64-bit little-endian ELF file";
		return -1;
	}
	e->type = rd_load16(p + 16, 0);
	e->machine = rd_load16(p + 18, 0);
	e->shoff = rd_load64(p + 40, 0);
	shnum = rd_load16(p + 60, 0);
	shstrndx = rd_load16(p + 62, 0);
	if (rd_load16(p + 58, 0) != XS_SHDR_SIZE || e->shoff == 0 || e->shoff > n || (n - e->shoff) / XS_SHDR_SIZE < 1) {
		*why = "the ELF section header table is missing or out of bounds";
		return -1;
	}
	if (shnum == 0) /* extended numbering: the count is in section 0's size */
		shnum = (uint32_t)(rd_load64(p + e->shoff + 32, 0) > UINT32_MAX ? 0 : rd_load64(p + e->shoff + 32, 0));
	if (shstrndx == 0xffff)
		shstrndx = rd_load32(p + e->shoff + 40, 0);
	if (shnum == 0 || shnum > (n - e->shoff) / XS_SHDR_SIZE || shstrndx >= shnum) {
		*why = "the ELF section header table is out of bounds";
		return -1;
	}
	e->shnum = shnum;
	e->shstrndx = shstrndx;
	return 0;
}

static void xs_elf_sec(const struct xs_elf *e, uint32_t i, struct xs_sec *s)
{
	const uint8_t *h = e->p + e->shoff + (uint64_t)i * XS_SHDR_SIZE;

	s->name = rd_load32(h, 0);
	s->type = rd_load32(h + 4, 0);
	s->addr = rd_load64(h + 16, 0);
	s->off = rd_load64(h + 24, 0);
	s->size = rd_load64(h + 32, 0);
	s->link = rd_load32(h + 40, 0);
	s->entsize = rd_load64(h + 56, 0);
}

/* The bytes of a section, or NULL when they are not in the file. */
static const uint8_t *xs_elf_data(const struct xs_elf *e, const struct xs_sec *s)
{
	if (s->type == SHT_NOBITS_ || s->size > e->n || s->off > e->n - s->size)
		return NULL;
	return e->p + s->off;
}

/* The NUL-terminated string at off in the string-table section idx, or NULL. */
static const char *xs_elf_str(const struct xs_elf *e, uint32_t idx, uint64_t off)
{
	struct xs_sec s;
	const uint8_t *d;

	if (idx >= e->shnum)
		return NULL;
	xs_elf_sec(e, idx, &s);
	if ((d = xs_elf_data(e, &s)) == NULL || off >= s.size || memchr(d + off, '\0', s.size - off) == NULL)
		return NULL;
	return (const char *)d + off;
}

/* Finds the first section of a type, or by name when name is not NULL.
 * Returns its index, or UINT32_MAX. */
static uint32_t xs_elf_find(const struct xs_elf *e, uint32_t type, const char *name, struct xs_sec *out)
{
	uint32_t i;

	for (i = 1; i < e->shnum; i++) {
		const char *nm;

		xs_elf_sec(e, i, out);
		if (name == NULL ? out->type == type
				 : (nm = xs_elf_str(e, e->shstrndx, out->name)) != NULL && strcmp(nm, name) == 0)
			return i;
	}
	return UINT32_MAX;
}

static int xs_relative_type(uint16_t machine, uint32_t type)
{
	switch (machine) {
	case 62: /* x86-64 */
		return type == 8;
	case 183: /* AArch64 */
		return type == 1027;
	case 21: /* PPC64 */
		return type == 22;
	case 243: /* RISC-V */
	case 258: /* LoongArch */
		return type == 3;
	default:
		return 0;
	}
}

/* Relocated values of the map's words: val[i] for the word at map.addr +
 * 8i when has[i]. Filled from RELATIVE relocations of executables and
 * shared objects. */
struct xs_relocs {
	uint64_t *val;
	uint8_t *has;
	uint64_t base, words;
};

static void xs_relocs_section(const struct xs_elf *e, const struct xs_sec *s, struct xs_relocs *rl)
{
	const uint8_t *d = xs_elf_data(e, s);
	uint64_t i, off, w;

	for (i = 0; d != NULL && i < s->size / XS_RELA_SIZE; i++) {
		const uint8_t *r = d + i * XS_RELA_SIZE;

		off = rd_load64(r, 0);
		if (!xs_relative_type(e->machine, (uint32_t)rd_load64(r + 8, 0)) || off < rl->base || (off - rl->base) % 8)
			continue;
		if ((w = (off - rl->base) / 8) < rl->words) {
			rl->val[w] = rd_load64(r + 16, 0);
			rl->has[w] = 1;
		}
	}
}

static int xs_relocs_load(const struct xs_elf *e, const struct xs_sec *map, struct xs_relocs *rl)
{
	struct xs_sec s;
	uint32_t i;

	memset(rl, 0, sizeof(*rl));
	if (e->type != ET_EXEC_ && e->type != ET_DYN_)
		return 0;
	rl->base = map->addr;
	rl->words = map->size / 8;
	rl->val = calloc(rl->words ? rl->words : 1, sizeof(uint64_t));
	rl->has = calloc(rl->words ? rl->words : 1, 1);
	if (rl->val == NULL || rl->has == NULL)
		return -1;
	for (i = 1; i < e->shnum; i++) {
		xs_elf_sec(e, i, &s);
		if (s.type == SHT_RELA_)
			xs_relocs_section(e, &s, rl);
	}
	return 0;
}

/* A sled field at byte off of the map: relocated when it is 0 in the file. */
static uint64_t xs_sled_field(const uint8_t *d, uint64_t off, const struct xs_relocs *rl)
{
	uint64_t v = rd_load64(d + off, 0);

	if (v == 0 && rl->has != NULL && off / 8 < rl->words && rl->has[off / 8])
		return rl->val[off / 8];
	return v;
}

/* Reads the sleds and numbers the functions as the runtime does. */
static int xs_read_sleds(struct xray_symbols *s, const uint8_t *d, const struct xs_sec *map, const struct xs_relocs *rl)
{
	uint64_t i, fn, cur = 0;
	uint32_t id = 1;

	for (i = 0; i < map->size / XS_SLED_SIZE; i++) {
		uint64_t off = i * XS_SLED_SIZE;

		fn = xs_sled_field(d, off + 8, rl);
		if (d[off + 18] >= 2)
			fn += map->addr + off + 8;
		if (cur == 0) {
			cur = fn;
			if (s->n == 0 && xs_push(s, id, fn) != 0)
				return -1;
			s->fns[s->n - 1].addr = fn;
		}
		if (fn != cur) {
			if (id == XS_MAX_ID)
				break;
			cur = fn;
			if (xs_push(s, ++id, fn) != 0)
				return -1;
		}
	}
	return 0;
}

static int xs_sym_cmp(const void *a, const void *b)
{
	const struct xs_sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if ((x->size == 0) != (y->size == 0))
		return x->size == 0 ? 1 : -1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* The function symbols of a symbol table, sorted; *n set. NULL when there
 * are none (*n = 0) or out of memory (*n = SIZE_MAX). */
static struct xs_sym *xs_syms_load(const struct xs_elf *e, const struct xs_sec *tab, size_t *n)
{
	const uint8_t *d = xs_elf_data(e, tab);
	size_t count = d ? (size_t)(tab->size / XS_SYM_SIZE) : 0, i;
	struct xs_sym *v;

	*n = 0;
	if (count == 0)
		return NULL;
	if ((v = malloc(count * sizeof(*v))) == NULL) {
		*n = SIZE_MAX;
		return NULL;
	}
	for (i = 0; i < count; i++) {
		const uint8_t *q = d + i * XS_SYM_SIZE;
		unsigned type = q[4] & 0xf, bind = q[4] >> 4;

		if ((type != 2 && type != 10) || rd_load64(q + 8, 0) == 0) /* STT_FUNC, STT_GNU_IFUNC */
			continue;
		v[*n].value = rd_load64(q + 8, 0);
		v[*n].size = rd_load64(q + 16, 0);
		v[*n].name = rd_load32(q, 0);
		v[*n].rank = bind == 1 ? 0 : bind == 2 ? 1 : 2;
		(*n)++;
	}
	qsort(v, *n, sizeof(*v), xs_sym_cmp);
	return v;
}

/* The symbol naming addr: the best one at it, else one whose range holds it. */
static const struct xs_sym *xs_sym_find(const struct xs_sym *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* first symbol with value > addr */
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	hi = lo - 1;
	while (hi > 0 && v[hi - 1].value == v[lo - 1].value)
		hi--;
	if (v[hi].value == addr || addr - v[hi].value < v[hi].size)
		return &v[hi];
	return NULL;
}

/* Names each function of the map from .symtab, else .dynsym. */
static int xs_name_functions(struct xray_symbols *s, const struct xs_elf *e)
{
	struct xs_sec tab;
	struct xs_sym *v;
	size_t n, i;

	if (xs_elf_find(e, SHT_SYMTAB_, NULL, &tab) == UINT32_MAX && xs_elf_find(e, SHT_DYNSYM_, NULL, &tab) == UINT32_MAX)
		return 0;
	if ((v = xs_syms_load(e, &tab, &n)) == NULL)
		return n == SIZE_MAX ? -1 : 0;
	for (i = 0; i < s->n; i++) {
		const struct xs_sym *sym = xs_sym_find(v, n, s->fns[i].addr);
		const char *name = sym ? xs_elf_str(e, tab.link, sym->name) : NULL;

		if (name != NULL && name[0] != '\0' && (s->fns[i].name = xs_name_demangled(s, name, strlen(name))) == 0) {
			free(v);
			return -1;
		}
	}
	free(v);
	return 0;
}

static int xs_load_elf(struct xray_symbols *s, const uint8_t *p, size_t n, char *err, size_t errlen)
{
	struct xs_relocs rl;
	struct xs_elf e;
	struct xs_sec map;
	const uint8_t *d;
	const char *why = NULL;
	int rc = INGEST_ENOTTRACE;

	if (xs_elf_open(&e, p, n, &why) != 0)
		goto out_err;
	if (xs_elf_find(&e, 0, "xray_instr_map", &map) == UINT32_MAX || (d = xs_elf_data(&e, &map)) == NULL) {
		why = "no xray_instr_map section (was the binary built with -fxray-instrument?)";
		goto out_err;
	}
	if (map.size % XS_SLED_SIZE != 0 || map.size == 0) {
		why = "the xray_instr_map section is not a whole number of 32-byte sleds";
		goto out_err;
	}
	rc = INGEST_ENOMEM;
	if (xs_relocs_load(&e, &map, &rl) != 0 || xs_read_sleds(s, d, &map, &rl) != 0 || xs_name_functions(s, &e) != 0)
		why = "out of memory";
	else
		rc = INGEST_OK;
	free(rl.val);
	free(rl.has);
	if (rc == INGEST_OK)
		return rc;
out_err:
	snprintf(err, errlen, "%s", why);
	return rc;
}

/* ---- YAML ---------------------------------------------------------------- */

/* One `key: value` of a flow mapping, as slices of the line. */
struct xs_kv {
	const char *key, *val;
	size_t klen, vlen;
	int quoted; /* 1 single, 2 double: the value holds escapes */
};

static const char *xs_skip_space(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* Reads a quoted scalar starting at *p (the quote); moves *p past it. */
static int xs_quoted(const char **p, const char *end, struct xs_kv *kv)
{
	char q = **p;
	const char *s = ++*p;

	while (*p < end) {
		if (**p == q && !(q == '\'' && *p + 1 < end && (*p)[1] == '\'')) {
			kv->val = s;
			kv->vlen = (size_t)(*p - s);
			kv->quoted = q == '\'' ? 1 : 2;
			(*p)++;
			return 0;
		}
		if (((**p == '\\' && q == '"') || (**p == '\'' && q == '\'')) && *p + 1 < end)
			(*p)++;
		(*p)++;
	}
	return -1;
}

/* Reads the next `key: value` of a flow mapping at *p; 1 when read, 0 at
 * the closing brace, -1 when malformed. */
static int xs_next_kv(const char **p, const char *end, struct xs_kv *kv)
{
	const char *s = xs_skip_space(*p, end);

	memset(kv, 0, sizeof(*kv));
	if (s < end && *s == '}')
		return 0;
	kv->key = s;
	while (s < end && *s != ':' && *s != ',' && *s != '}')
		s++;
	if (s >= end || *s != ':')
		return -1;
	kv->klen = (size_t)(s - kv->key);
	s = xs_skip_space(s + 1, end);
	if (s < end && (*s == '\'' || *s == '"')) {
		if (xs_quoted(&s, end, kv) != 0)
			return -1;
	} else {
		kv->val = s;
		while (s < end && *s != ',' && *s != '}')
			s++;
		kv->vlen = (size_t)(s - kv->val);
		while (kv->vlen > 0 && (kv->val[kv->vlen - 1] == ' ' || kv->val[kv->vlen - 1] == '\t'))
			kv->vlen--;
	}
	s = xs_skip_space(s, end);
	if (s < end && *s == ',')
		s++;
	else if (s >= end || *s != '}')
		return -1;
	*p = s;
	return 1;
}

static int xs_key_is(const struct xs_kv *kv, const char *k)
{
	return kv->klen == strlen(k) && memcmp(kv->key, k, kv->klen) == 0;
}

/* Parses a decimal id of at most XS_MAX_ID; -1 when it is not one. */
static int64_t xs_parse_id(const char *s, size_t n)
{
	int64_t v = 0;
	size_t i;

	if (n == 0 || n > 10)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= XS_MAX_ID ? v : -1;
}

/* Stores a YAML scalar as a name, undoing its escapes ('' and \x). */
static uint32_t xs_name_yaml(struct xray_symbols *s, const struct xs_kv *kv)
{
	char buf[1024];
	size_t i, n = 0;

	if (kv->quoted == 0 || kv->vlen > sizeof(buf))
		return xs_name_put(s, kv->val, kv->vlen);
	for (i = 0; i < kv->vlen; i++) {
		if ((kv->val[i] == '\'' && kv->quoted == 1) || (kv->val[i] == '\\' && kv->quoted == 2))
			i++;
		if (i < kv->vlen)
			buf[n++] = kv->val[i];
	}
	return xs_name_put(s, buf, n);
}

/* Parses one `- { ... }` line. Returns 0, or -1 with *why set. */
static int xs_yaml_line(struct xray_symbols *s, const char *p, const char *end, const char **why)
{
	struct xs_kv kv, name = { 0 };
	int64_t id = -1;
	int rc;

	p = xs_skip_space(p + 1, end);
	if (p >= end || *p != '{') {
		*why = "expected '- { ... }'";
		return -1;
	}
	p++;
	while ((rc = xs_next_kv(&p, end, &kv)) == 1) {
		if (xs_key_is(&kv, "id") && (id = xs_parse_id(kv.val, kv.vlen)) < 0) {
			*why = "an id that is not a number from 0 to 2^28 - 1";
			return -1;
		}
		if (xs_key_is(&kv, "function-name"))
			name = kv;
	}
	if (rc < 0 || id < 0) {
		*why = rc < 0 ? "a malformed '{ key: value, ... }' mapping" : "an entry without an id";
		return -1;
	}
	if (xs_push(s, (uint32_t)id, 0) != 0 ||
	    (name.val != NULL && name.vlen > 0 && (s->fns[s->n - 1].name = xs_name_yaml(s, &name)) == 0)) {
		*why = "out of memory";
		return -1;
	}
	return 0;
}

static int xs_fn_cmp(const void *a, const void *b)
{
	const struct xs_fn *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if ((x->name == 0) != (y->name == 0)) /* named entries first */
		return x->name == 0 ? 1 : -1;
	return x->name < y->name ? -1 : x->name > y->name; /* then file order */
}

/* Sorts by id and keeps one entry per id, the first named one. */
static void xs_dedupe(struct xray_symbols *s)
{
	size_t i, k = 0;

	qsort(s->fns, s->n, sizeof(*s->fns), xs_fn_cmp);
	for (i = 0; i < s->n; i++)
		if (k == 0 || s->fns[k - 1].id != s->fns[i].id)
			s->fns[k++] = s->fns[i];
	s->n = k;
}

static int xs_load_yaml(struct xray_symbols *s, const char *p, size_t n, char *err, size_t errlen)
{
	const char *end = p + n, *eol, *q;
	const char *why = NULL;
	unsigned long line = 0;

	for (; p < end; p = eol + 1) {
		line++;
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			eol = end;
		q = xs_skip_space(p, eol);
		if (q == eol || *q == '#' || *q == '\r' || (eol - q >= 3 && (memcmp(q, "---", 3) == 0 || memcmp(q, "...", 3) == 0)))
			continue;
		if (*q != '-' || xs_yaml_line(s, q, eol, &why) != 0) {
			snprintf(err, errlen, "instrumentation map line %lu: %s", line, why ? why : "expected '- { ... }'");
			return why && strcmp(why, "out of memory") == 0 ? INGEST_ENOMEM : INGEST_ENOTTRACE;
		}
	}
	if (s->n == 0) {
		snprintf(err, errlen, "the instrumentation map has no entries");
		return INGEST_ENOTTRACE;
	}
	xs_dedupe(s);
	return INGEST_OK;
}

/* Whether the text looks like llvm-xray's YAML: its first line that is not
 * blank or a comment starts with "---" or "- {". */
static int xs_is_yaml(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
		i++;
	return (n - i >= 3 && memcmp(p + i, "---", 3) == 0) || (n - i >= 3 && memcmp(p + i, "- {", 3) == 0);
}

int xray_symbols_load(const uint8_t *buf, size_t n, struct xray_symbols **out, char *err, size_t errlen)
{
	struct xray_symbols *s;
	int rc;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return INGEST_ENOMEM;
	}
	if (n >= 4 && memcmp(buf, "\x7f" "ELF", 4) == 0) {
		rc = xs_load_elf(s, buf, n, err, errlen);
	} else if (xs_is_yaml(buf, n)) {
		rc = xs_load_yaml(s, (const char *)buf, n, err, errlen);
	} else {
		snprintf(err, errlen, "not an ELF binary nor the YAML of `llvm-xray extract`");
		rc = INGEST_ENOTTRACE;
	}
	if (rc != INGEST_OK) {
		xray_symbols_free(s);
		return rc;
	}
	*out = s;
	return INGEST_OK;
}
