/*
 * The shared library that a program loads reports the version of the header it was built with, CMake's
 * project version (read from that header) agrees, and the program found the library through its SONAME,
 * libbloomkit.so.<major>. Linked against the shared library on purpose: the unit tests use the static one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <bloomkit/bloomkit.h>

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

int main(void)
{
    char number[32];
    snprintf(number, sizeof number, "%d.%d.%d", BK_VERSION_MAJOR, BK_VERSION_MINOR, BK_VERSION_PATCH);
    printf("header %s (%d), library %s (%u), CMake %s\n", BK_VERSION_STRING, BK_VERSION_NUMBER,
           bk_version_string(), bk_version_number(), BK_CMAKE_VERSION);
    expect(bk_version_number() == BK_VERSION_NUMBER, "bk_version_number() == BK_VERSION_NUMBER");
    expect(strcmp(bk_version_string(), BK_VERSION_STRING) == 0, "bk_version_string() == BK_VERSION_STRING");
    expect(strcmp(BK_VERSION_STRING, number) == 0, "BK_VERSION_STRING spells the MAJOR.MINOR.PATCH macros");
    expect(strcmp(BK_VERSION_STRING, BK_CMAKE_VERSION) == 0, "CMake's project version is the header's");

    Dl_info info;
    const char *base = "";
    if (dladdr(bk_version_string(), &info) && info.dli_fname) {
        base = strrchr(info.dli_fname, '/');
        base = base ? base + 1 : info.dli_fname;
    }
    printf("bk_version_string() comes from %s\n", base);
    expect(strcmp(base, BK_EXPECTED_SONAME) == 0, "the library was loaded by its SONAME " BK_EXPECTED_SONAME);
    return failures ? 1 : 0;
}
