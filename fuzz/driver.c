/* Runs the fuzz target over files and directories without libFuzzer: replays a corpus in ordinary
 * builds (and under ASan/UBSan in `make test-asan`). Exit 0 when every input ran. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        perror(path);
        return -1;
    }
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (!b || fread(b, 1, (size_t)n, fp) != (size_t)n) {
        fprintf(stderr, "%s: read failed\n", path);
        fclose(fp);
        free(b);
        return -1;
    }
    fclose(fp);
    LLVMFuzzerTestOneInput(b, (size_t)n);
    free(b);
    return 1;
}

int main(int argc, char **argv)
{
    long inputs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) < 0) return 1;
            inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            if (run_file(p) < 0) return 1;
            inputs++;
        }
        if (d) closedir(d);
    }
    printf("replayed %ld inputs\n", inputs);
    return inputs > 0 ? 0 : 1;
}
