/* A cubin as the real driver reads it: an ELF file (machine EM_CUDA) whose
 * .nv.info sections hold each kernel's attributes. Read here: each kernel's
 * parameters (offset and size, EIATTR_KPARAM_INFO), registers per thread
 * (EIATTR_REGCOUNT), local memory frame (EIATTR_FRAME_SIZE), launch bounds
 * (EIATTR_MAX_THREADS), static shared memory (the .nv.shared.NAME section,
 * which on sm_80 and later includes the 1 KiB the system reserves per
 * block), and the CUDA version of the compiler (EIATTR_CUDA_API_VERSION).
 * The attribute codes are those seen in NVRTC 13's output and checked by
 * the stand-in's own test against ptxas's report (test_standin.c). */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "standin.h"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

/* .nv.info entries: a format byte, an attribute byte, then a 16-bit value
 * or (EIFMT_SVAL) the size of the data that follows. */
#define EIFMT_SVAL 4
#define EIATTR_MAX_THREADS 0x05
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_REGCOUNT 0x2f
#define EIATTR_CUDA_API_VERSION 0x37
#define RESERVED_SHARED 1024 /* sm_80 and later */

typedef struct elf_view {
    const unsigned char *data;
    size_t size;
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh;
    const char *shstr;
    const Elf64_Sym *syms;
    size_t nsyms;
    const char *str;
    size_t str_size;
} elf_view;

static int fail(char *why, size_t size, const char *text)
{
    snprintf(why, size, "%s", text);
    return -1;
}

/* The file's length: the end of the furthest header table or section
 * (cuModuleLoadData is given no size). */
static size_t elf_length(const Elf64_Ehdr *eh)
{
    size_t end = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    size_t ph = eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize;
    if (ph > end)
        end = ph;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)((const unsigned char *)eh + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_offset + sh[i].sh_size > end)
            end = sh[i].sh_offset + sh[i].sh_size;
    return end;
}

static const char *section_name(const elf_view *v, unsigned i) { return v->shstr + v->sh[i].sh_name; }

static int open_view(const void *data, elf_view *v, char *why, size_t why_size)
{
    memset(v, 0, sizeof *v);
    const Elf64_Ehdr *eh = data;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG))
        return fail(why, why_size, "not an ELF image (a cubin); the stand-in reads no PTX or fatbin");
    if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_CUDA)
        return fail(why, why_size, "an ELF image, but not a 64-bit CUDA cubin");
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 || eh->e_shstrndx >= eh->e_shnum)
        return fail(why, why_size, "a cubin without a usable section table");
    v->data = data;
    v->eh = eh;
    v->size = elf_length(eh);
    v->sh = (const Elf64_Shdr *)(v->data + eh->e_shoff);
    v->shstr = (const char *)v->data + v->sh[eh->e_shstrndx].sh_offset;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (v->sh[i].sh_type == SHT_SYMTAB && v->sh[i].sh_link < eh->e_shnum) {
            v->syms = (const Elf64_Sym *)(v->data + v->sh[i].sh_offset);
            v->nsyms = v->sh[i].sh_size / sizeof(Elf64_Sym);
            v->str = (const char *)v->data + v->sh[v->sh[i].sh_link].sh_offset;
            v->str_size = v->sh[v->sh[i].sh_link].sh_size;
        }
    }
    return v->syms ? 0 : fail(why, why_size, "a cubin without a symbol table");
}

static const char *symbol_name(const elf_view *v, size_t index)
{
    if (index >= v->nsyms || v->syms[index].st_name >= v->str_size)
        return "";
    return v->str + v->syms[index].st_name;
}

static int find_section(const elf_view *v, const char *prefix, const char *name)
{
    size_t plen = strlen(prefix);
    for (unsigned i = 0; i < v->eh->e_shnum; i++) {
        const char *s = section_name(v, i);
        if (!strncmp(s, prefix, plen) && !strcmp(s + plen, name))
            return (int)i;
    }
    return -1;
}

typedef void (*attribute_fn)(void *ctx, unsigned attr, const unsigned char *value, unsigned size);

/* Calls fn for every entry of a .nv.info section. */
static void each_attribute(const elf_view *v, unsigned section, attribute_fn fn, void *ctx)
{
    const unsigned char *p = v->data + v->sh[section].sh_offset, *end = p + v->sh[section].sh_size;
    while (p + 4 <= end) {
        unsigned fmt = p[0], attr = p[1], half = (unsigned)p[2] | (unsigned)p[3] << 8;
        if (fmt == EIFMT_SVAL) {
            if (p + 4 + half > end)
                return;
            fn(ctx, attr, p + 4, half);
            p += 4 + half;
        } else {
            unsigned char value[2] = {p[2], p[3]};
            fn(ctx, attr, value, 2);
            p += 4;
        }
    }
}

static uint32_t u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

typedef struct kernel_ctx {
    standin_kernel_info *k;
    int *cuda_version;
} kernel_ctx;

static void kernel_attribute(void *ctx, unsigned attr, const unsigned char *value, unsigned size)
{
    kernel_ctx *c = ctx;
    standin_kernel_info *k = c->k;
    if (attr == EIATTR_KPARAM_INFO && size >= 12) {
        unsigned ordinal = (unsigned)value[4] | (unsigned)value[5] << 8;
        unsigned offset = (unsigned)value[6] | (unsigned)value[7] << 8;
        unsigned bytes = u32_at(value + 8) >> 18 & 0x3fff;
        if (ordinal < STANDIN_MAX_PARAMS) {
            k->param_offset[ordinal] = (uint16_t)offset;
            k->param_size[ordinal] = (uint16_t)bytes;
            if (ordinal + 1 > k->nparams)
                k->nparams = ordinal + 1;
        }
    } else if (attr == EIATTR_MAX_THREADS && size >= 12) {
        for (int d = 0; d < 3; d++)
            k->max_threads[d] = u32_at(value + 4 * d);
    } else if (attr == EIATTR_CUDA_API_VERSION && size >= 4) {
        const uint32_t v = u32_at(value); /* 130 for 13.0 */
        *c->cuda_version = (int)(v / 10 * 1000 + v % 10 * 10);
    }
}

typedef struct function_ctx {
    const elf_view *v;
    standin_image *image;
} function_ctx;

/* .nv.info's per-function entries, by symbol: registers and frame. */
static void function_attribute(void *ctx, unsigned attr, const unsigned char *value, unsigned size)
{
    function_ctx *c = ctx;
    if ((attr != EIATTR_REGCOUNT && attr != EIATTR_FRAME_SIZE) || size < 8)
        return;
    const char *name = symbol_name(c->v, u32_at(value));
    for (size_t i = 0; i < c->image->kernel_count; i++) {
        standin_kernel_info *k = &c->image->kernels[i];
        if (strcmp(k->name, name))
            continue;
        if (attr == EIATTR_REGCOUNT)
            k->registers = u32_at(value + 4);
        else
            k->frame_bytes = u32_at(value + 4);
    }
}

static int read_kernel(const elf_view *v, unsigned info_section, standin_image *image)
{
    const char *name = section_name(v, info_section) + strlen(".nv.info.");
    standin_kernel_info *k = &image->kernels[image->kernel_count];
    memset(k, 0, sizeof *k);
    if (strlen(name) >= sizeof k->name)
        return -1;
    strcpy(k->name, name);
    kernel_ctx ctx = {k, &image->cuda_version};
    each_attribute(v, info_section, kernel_attribute, &ctx);
    int shared = find_section(v, ".nv.shared.", name);
    if (shared >= 0) {
        size_t bytes = v->sh[shared].sh_size;
        k->shared_bytes = (unsigned)(image->arch >= 80 && bytes >= RESERVED_SHARED ? bytes - RESERVED_SHARED : bytes);
    }
    image->kernel_count++;
    return 0;
}

int standin_image_read(const void *data, standin_image *image, char *why, size_t why_size)
{
    memset(image, 0, sizeof *image);
    elf_view v;
    if (open_view(data, &v, why, why_size))
        return -1;
    image->size = v.size;
    image->arch = (int)(v.eh->e_flags >> 8 & 0xff);
    image->kernels = calloc(v.eh->e_shnum, sizeof *image->kernels);
    if (!image->kernels)
        return fail(why, why_size, "out of memory");
    for (unsigned i = 0; i < v.eh->e_shnum; i++)
        if (!strncmp(section_name(&v, i), ".nv.info.", 9) && read_kernel(&v, i, image)) {
            standin_image_free(image);
            return fail(why, why_size, "a kernel name too long for the stand-in");
        }
    int info = find_section(&v, ".nv.info", "");
    if (info >= 0) {
        function_ctx ctx = {&v, image};
        each_attribute(&v, (unsigned)info, function_attribute, &ctx);
    }
    if (!image->cuda_version) {
        standin_image_free(image);
        return fail(why, why_size, "a cubin that does not say which CUDA made it (EIATTR_CUDA_API_VERSION)");
    }
    return 0;
}

void standin_image_free(standin_image *image)
{
    free(image->kernels);
    memset(image, 0, sizeof *image);
}

const standin_kernel_info *standin_image_kernel(const standin_image *image, const char *name)
{
    for (size_t i = 0; i < image->kernel_count; i++)
        if (!strcmp(image->kernels[i].name, name))
            return &image->kernels[i];
    return NULL;
}
