// heapcount: an LD_PRELOAD shim that counts live heap allocations by usable size (16-byte classes
// up to 64 KiB) in the process it is loaded into. SIGUSR2 prints the totals and every class over
// 200 KB to stderr; SIGUSR1 arms backtraces of the first 3 allocations of each size listed in
// HEAPCOUNT_TRACE (comma-separated byte sizes), to find who allocates them. Used by
// bench/heap_per_stream.sh; not part of sluice itself. Build: gcc -O2 -shared -fPIC -o heapcount.so heapcount.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLASSES 4097
static _Atomic long live_count[CLASSES];
static _Atomic long live_bytes[CLASSES];
static void* (*real_malloc)(size_t);
static void (*real_free)(void*);
static void* (*real_calloc)(size_t, size_t);
static void* (*real_realloc)(void*, size_t);
static int (*real_posix_memalign)(void**, size_t, size_t);
static void* (*real_aligned_alloc)(size_t, size_t);
static void* (*real_memalign)(size_t, size_t);
static int state;  // 0 not initialised, 2 initialising (dlsym may allocate), 1 ready
static char bootstrap[65536];
static size_t bootstrap_used;
static long trace_sizes[8];
static int trace_n;
static _Atomic int traced[8];
static volatile sig_atomic_t armed;
static __thread int in_trace;

static int is_bootstrap(void* p) { return (char*)p >= bootstrap && (char*)p < bootstrap + sizeof bootstrap; }
static int class_of(size_t s) { size_t c = s / 16; return c >= CLASSES - 1 ? CLASSES - 1 : (int)c; }

static void count(void* p, int sign) {
  if (!p || is_bootstrap(p)) return;
  size_t u = malloc_usable_size(p);
  int c = class_of(u);
  live_count[c] += sign;
  live_bytes[c] += sign * (long)u;
  if (sign < 0 || !armed || in_trace) return;
  for (int i = 0; i < trace_n; ++i) {
    if (trace_sizes[i] != c * 16 || traced[i] >= 3) continue;
    traced[i]++;
    in_trace = 1;
    void* frames[24];
    int n = backtrace(frames, 24);
    char head[64];
    int k = snprintf(head, sizeof head, "=== size %ld\n", trace_sizes[i]);
    write(2, head, (size_t)k);
    backtrace_symbols_fd(frames, n, 2);
    in_trace = 0;
  }
}

static void report(int sig) {
  (void)sig;
  char line[128];
  long n = 0, b = 0;
  for (int i = 0; i < CLASSES; ++i) {
    n += live_count[i];
    b += live_bytes[i];
  }
  int k = snprintf(line, sizeof line, "heapcount: live %ld allocations %ld bytes\n", n, b);
  write(2, line, (size_t)k);
  for (int i = 0; i < CLASSES; ++i) {
    if (live_bytes[i] <= 200000) continue;
    k = snprintf(line, sizeof line, "heapcount: size %d: %ld allocations %ld bytes\n", i * 16, (long)live_count[i],
                 (long)live_bytes[i]);
    write(2, line, (size_t)k);
  }
}

static void arm(int sig) { (void)sig; armed = 1; }

static void init(void) {
  state = 2;
  real_malloc = dlsym(RTLD_NEXT, "malloc");
  real_free = dlsym(RTLD_NEXT, "free");
  real_calloc = dlsym(RTLD_NEXT, "calloc");
  real_realloc = dlsym(RTLD_NEXT, "realloc");
  real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
  real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
  real_memalign = dlsym(RTLD_NEXT, "memalign");
  const char* t = getenv("HEAPCOUNT_TRACE");
  while (t && *t && trace_n < 8) {
    char* end;
    trace_sizes[trace_n++] = strtol(t, &end, 10);
    t = *end == ',' ? end + 1 : NULL;
  }
  signal(SIGUSR2, report);
  signal(SIGUSR1, arm);
  state = 1;
}

void* malloc(size_t s) {
  if (state != 1) {
    if (state == 2) {  // dlsym allocating while we initialise: serve it from a static arena
      void* p = bootstrap + bootstrap_used;
      bootstrap_used += (s + 15) & ~(size_t)15;
      return p;
    }
    init();
  }
  void* p = real_malloc(s);
  count(p, 1);
  return p;
}

void free(void* p) {
  if (!p || is_bootstrap(p)) return;
  count(p, -1);
  real_free(p);
}

void* calloc(size_t a, size_t b) {
  if (state != 1) {
    void* p = malloc(a * b);
    memset(p, 0, a * b);
    return p;
  }
  void* p = real_calloc(a, b);
  count(p, 1);
  return p;
}

void* realloc(void* q, size_t s) {
  if (q && is_bootstrap(q)) {
    void* p = malloc(s);
    memcpy(p, q, s);
    return p;
  }
  if (state != 1) init();
  count(q, -1);
  void* p = real_realloc(q, s);
  count(p, 1);
  return p;
}

int posix_memalign(void** out, size_t align, size_t s) {
  if (state != 1) init();
  int r = real_posix_memalign(out, align, s);
  if (r == 0) count(*out, 1);
  return r;
}

void* aligned_alloc(size_t align, size_t s) {
  if (state != 1) init();
  void* p = real_aligned_alloc(align, s);
  count(p, 1);
  return p;
}

void* memalign(size_t align, size_t s) {
  if (state != 1) init();
  void* p = real_memalign(align, s);
  count(p, 1);
  return p;
}
