/* The viewer's script inside the library: the bundle CMake made from web/
 * (three.js and web/viewer.js, by esbuild), taken in whole by the assembler,
 * NUL-terminated. */
#include "report/page.h"

#ifdef PTREG_VIEWER_JS
__asm__(".section .rodata\n"
        ".globl report_viewer_bytes\n"
        ".hidden report_viewer_bytes\n"
        ".type report_viewer_bytes, @object\n"
        "report_viewer_bytes:\n"
        ".incbin \"" PTREG_VIEWER_JS "\"\n"
        ".byte 0\n"
        ".previous\n");
extern const char report_viewer_bytes[];

const char *report_viewer_script(void) { return report_viewer_bytes; }
#else
const char *report_viewer_script(void) { return NULL; }
#endif
