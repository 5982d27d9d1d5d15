// The sm_90 SFU table bundle, compiled in (sim/sfu/sfu_tables.hpp): the assembler includes
// golden/profiles/sm90/sfu-tables.bin (EXMY_SFU_TABLES_FILE, set by sim/CMakeLists.txt when the
// file exists); without it the two symbols are equal and sfu::sm90() says what to do.
#if defined(EXMY_SFU_TABLES_FILE)
#define EXMY_SFU_INCBIN ".incbin \"" EXMY_SFU_TABLES_FILE "\"\n"
#else
#define EXMY_SFU_INCBIN ""
#endif

__asm__(
    ".section .rodata\n"
    ".balign 16\n"
    ".global exmy_sfu_tables_begin\n"
    ".global exmy_sfu_tables_end\n"
    "exmy_sfu_tables_begin:\n" EXMY_SFU_INCBIN
    "exmy_sfu_tables_end:\n"
    ".byte 0\n"
    ".previous\n");
