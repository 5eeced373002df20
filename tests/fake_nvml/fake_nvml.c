/*
 * A fake libnvidia-ml.so.1 for tests: the NVML functions rackwise uses, over GPUs described in a text state
 * file, so that tests (and a real slurmd's prolog and epilog, which run in processes of their own) can set and
 * see power limits without NVIDIA hardware. Every call is appended to a log file.
 *
 * The state file is RACKWISE_FAKE_NVML_STATE, else "fake_nvml.state" beside this library (slurmd does not pass
 * its environment to the processes that run SPANK prologs). Lines:
 *   gpu <uuid> <min_mw> <max_mw> <default_mw> <current_mw> <usage_mw>   one per GPU, index = order
 *   fail <function> <nvmlReturn_t> [<gpu index>]                        make a call fail (for one GPU)
 *   log <path>                                                         call log (default: <state>.log)
 * The file is read on every call and rewritten (under an flock of "<state>.lock") when a limit changes, so
 * what one process sets, the next one sees. Log lines: "<pid> <function> [gpu=<i>] [limit=<mw>] -> <code>".
 *
 * Built with FAKE_NVML_MINIMAL, it is an NVML that has only what power limits need, under NVML's first names
 * (nvmlInit, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex): no _v2 entry points, no nvmlErrorString, no
 * lookup by UUID, no default limit, no power usage.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;

enum {
  kSuccess = 0,
  kUninitialized = 1,
  kInvalidArgument = 2,
  kNotFound = 6,
  kUnknown = 999,
  kMaxGpus = 64,
  kMaxFails = 32,
  kPathMax = 4096,
};

/* A versioned entry point, and its name in the log and in "fail" lines. */
#ifdef FAKE_NVML_MINIMAL
#define V2(name) name
#define V2_NAME(name) #name
#else
#define V2(name) name##_v2
#define V2_NAME(name) #name "_v2"
#endif

struct fake_gpu {
  char uuid[96];
  unsigned min_mw, max_mw, default_mw, current_mw, usage_mw;
};
struct fake_fail {
  char function[96];
  int code;
  int gpu; /* -1: every GPU */
};
struct fake_state {
  int gpu_count;
  struct fake_gpu gpus[kMaxGpus];
  int fail_count;
  struct fake_fail fails[kMaxFails];
  char log[kPathMax + 16];
  char other[8192]; /* lines kept as they are when the file is rewritten (fail, log, comments) */
};

static int g_initialized; /* init calls not yet matched by nvmlShutdown (NVML counts them too) */

static void state_path(char* path, size_t size) { /* size: kPathMax */
  const char* env = getenv("RACKWISE_FAKE_NVML_STATE");
  if (env && *env) {
    snprintf(path, size, "%s", env);
    return;
  }
  Dl_info info;
  if (dladdr((void*)&state_path, &info) && info.dli_fname) {
    const char* slash = strrchr(info.dli_fname, '/');
    int dir = slash ? (int)(slash - info.dli_fname) : 1;
    snprintf(path, size, "%.*s/fake_nvml.state", dir, slash ? info.dli_fname : ".");
    return;
  }
  snprintf(path, size, "fake_nvml.state");
}

static int lock_state(const char* path) {
  char lock[kPathMax + 8];
  snprintf(lock, sizeof lock, "%s.lock", path);
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) flock(fd, LOCK_EX);
  return fd;
}

static void unlock_state(int fd) {
  if (fd >= 0) close(fd);
}

static int read_state(const char* path, struct fake_state* s) {
  memset(s, 0, sizeof *s);
  snprintf(s->log, sizeof s->log, "%s.log", path);
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    struct fake_gpu g;
    struct fake_fail x = {.gpu = -1};
    char word[16];
    if (sscanf(line, "%15s", word) == 1 && strcmp(word, "gpu") == 0 && s->gpu_count < kMaxGpus &&
        sscanf(line, "gpu %95s %u %u %u %u %u", g.uuid, &g.min_mw, &g.max_mw, &g.default_mw, &g.current_mw,
               &g.usage_mw) == 6) {
      s->gpus[s->gpu_count++] = g;
      continue;
    }
    if (sscanf(line, "fail %95s %d %d", x.function, &x.code, &x.gpu) >= 2 && s->fail_count < kMaxFails) {
      s->fails[s->fail_count++] = x;
    } else if (strncmp(line, "log ", 4) == 0) {
      snprintf(s->log, sizeof s->log, "%s", line + 4);
      s->log[strcspn(s->log, "\n")] = 0;
    }
    strncat(s->other, line, sizeof s->other - strlen(s->other) - 1);
  }
  fclose(f);
  return 0;
}

static void write_state(const char* path, const struct fake_state* s) {
  char temporary[kPathMax + 32];
  snprintf(temporary, sizeof temporary, "%s.tmp.%d", path, (int)getpid());
  FILE* f = fopen(temporary, "w");
  if (!f) return;
  for (int i = 0; i < s->gpu_count; ++i) {
    const struct fake_gpu* g = &s->gpus[i];
    fprintf(f, "gpu %s %u %u %u %u %u\n", g->uuid, g->min_mw, g->max_mw, g->default_mw, g->current_mw,
            g->usage_mw);
  }
  fputs(s->other, f);
  fclose(f);
  rename(temporary, path);
}

static nvmlReturn_t injected(const struct fake_state* s, const char* function, int gpu) {
  for (int i = 0; i < s->fail_count; ++i) {
    if (strcmp(s->fails[i].function, function) == 0 && (s->fails[i].gpu < 0 || s->fails[i].gpu == gpu)) {
      return s->fails[i].code;
    }
  }
  return kSuccess;
}

static void log_call(const struct fake_state* s, const char* function, int gpu, long long limit, nvmlReturn_t r) {
  FILE* f = fopen(s->log, "a");
  if (!f) return;
  fprintf(f, "%d %s", (int)getpid(), function);
  if (gpu >= 0) fprintf(f, " gpu=%d", gpu);
  if (limit >= 0) fprintf(f, " limit=%lld", limit);
  fprintf(f, " -> %d\n", r);
  fclose(f);
}

/* Runs one call: locks and reads the state, checks initialisation, the GPU and injected failures, lets `op`
 * work on the GPU, writes the state back if `op` changed it, logs. */
typedef nvmlReturn_t (*gpu_op)(struct fake_state*, struct fake_gpu*, void*, int* changed);

static nvmlReturn_t run(const char* function, int gpu, long long limit, gpu_op op, void* arg) {
  char path[kPathMax];
  state_path(path, sizeof path);
  int lock = lock_state(path);
  struct fake_state* s = calloc(1, sizeof *s);
  nvmlReturn_t r = kUnknown;
  int changed = 0;
  if (s && read_state(path, s) == 0) {
    if (!g_initialized && strcmp(function, V2_NAME(nvmlInit)) != 0) {
      r = kUninitialized;
    } else if ((r = injected(s, function, gpu)) == kSuccess) {
      if (gpu >= s->gpu_count) r = kInvalidArgument;
      else r = op(s, gpu >= 0 ? &s->gpus[gpu] : NULL, arg, &changed);
    }
    if (changed) write_state(path, s);
    log_call(s, function, gpu, limit, r);
  }
  free(s);
  unlock_state(lock);
  return r;
}

static int device_index(nvmlDevice_t device) { return device ? (int)((uintptr_t)device - 1) : kMaxGpus; }
static nvmlDevice_t device_of(int index) { return (nvmlDevice_t)(uintptr_t)(index + 1); }

static nvmlReturn_t op_init(struct fake_state* s, struct fake_gpu* g, void* arg, int* changed) {
  ++g_initialized;
  return kSuccess;
}
static nvmlReturn_t op_count(struct fake_state* s, struct fake_gpu* g, void* arg, int* changed) {
  if (!arg) return kInvalidArgument;
  *(unsigned*)arg = (unsigned)s->gpu_count;
  return kSuccess;
}
static nvmlReturn_t op_nothing(struct fake_state* s, struct fake_gpu* g, void* arg, int* changed) { return kSuccess; }
static nvmlReturn_t op_uuid(struct fake_state* s, struct fake_gpu* g, void* arg, int* changed) {
  const char* uuid = *(const char**)arg;
  for (int i = 0; i < s->gpu_count; ++i) {
    if (strcmp(s->gpus[i].uuid, uuid) == 0) {
      *(int*)arg = i;
      return kSuccess;
    }
  }
  return kNotFound;
}
static nvmlReturn_t op_constraints(struct fake_state* s, struct fake_gpu* g, void* arg, int* changed) {
  unsigned** out = arg;
  if (!out[0] || !out[1]) return kInvalidArgument;
  *out[0] = g->min_mw;
  *out[1] = g->max_mw;
  return kSuccess;
}
static nvmlReturn_t op_default(struct fake_state* s, struct fake_gpu* g, void* arg, int* changed) {
  if (!arg) return kInvalidArgument;
  *(unsigned*)arg = g->default_mw;
  return kSuccess;
}
static nvmlReturn_t op_limit(struct fake_state* s, struct fake_gpu* g, void* arg, int* changed) {
  if (!arg) return kInvalidArgument;
  *(unsigned*)arg = g->current_mw;
  return kSuccess;
}
static nvmlReturn_t op_usage(struct fake_state* s, struct fake_gpu* g, void* arg, int* changed) {
  if (!arg) return kInvalidArgument;
  *(unsigned*)arg = g->usage_mw;
  return kSuccess;
}
static nvmlReturn_t op_set(struct fake_state* s, struct fake_gpu* g, void* arg, int* changed) {
  unsigned limit = *(unsigned*)arg;
  if (limit < g->min_mw || limit > g->max_mw) return kInvalidArgument;
  g->current_mw = limit;
  *changed = 1;
  return kSuccess;
}

#define EXPORT __attribute__((visibility("default")))

EXPORT nvmlReturn_t V2(nvmlInit)(void) { return run(V2_NAME(nvmlInit), -1, -1, op_init, NULL); }
EXPORT nvmlReturn_t nvmlShutdown(void) {
  nvmlReturn_t r = run("nvmlShutdown", -1, -1, op_nothing, NULL);
  if (r == kSuccess) --g_initialized;
  return r;
}
EXPORT nvmlReturn_t V2(nvmlDeviceGetCount)(unsigned* count) {
  return run(V2_NAME(nvmlDeviceGetCount), -1, -1, op_count, count);
}
EXPORT nvmlReturn_t V2(nvmlDeviceGetHandleByIndex)(unsigned index, nvmlDevice_t* device) {
  int gpu = index < kMaxGpus ? (int)index : kMaxGpus;
  nvmlReturn_t r = run(V2_NAME(nvmlDeviceGetHandleByIndex), gpu, -1, op_nothing, NULL);
  if (r == kSuccess && device) *device = device_of(gpu);
  return device ? r : kInvalidArgument;
}
#ifndef FAKE_NVML_MINIMAL
EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  union { const char* uuid; int index; } arg = {.uuid = uuid ? uuid : ""};
  nvmlReturn_t r = run("nvmlDeviceGetHandleByUUID", -1, -1, op_uuid, &arg);
  if (r == kSuccess && device) *device = device_of(arg.index);
  return device ? r : kInvalidArgument;
}
EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned* index) {
  nvmlReturn_t r = run("nvmlDeviceGetIndex", device_index(device), -1, op_nothing, NULL);
  if (r == kSuccess && index) *index = (unsigned)device_index(device);
  return index ? r : kInvalidArgument;
}
#endif
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned* min, unsigned* max) {
  unsigned* out[2] = {min, max};
  return run("nvmlDeviceGetPowerManagementLimitConstraints", device_index(device), -1, op_constraints, out);
}
#ifndef FAKE_NVML_MINIMAL
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned* limit) {
  return run("nvmlDeviceGetPowerManagementDefaultLimit", device_index(device), -1, op_default, limit);
}
#endif
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned* limit) {
  return run("nvmlDeviceGetPowerManagementLimit", device_index(device), -1, op_limit, limit);
}
EXPORT nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned limit) {
  return run("nvmlDeviceSetPowerManagementLimit", device_index(device), limit, op_set, &limit);
}
#ifndef FAKE_NVML_MINIMAL
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned* power) {
  return run("nvmlDeviceGetPowerUsage", device_index(device), -1, op_usage, power);
}
EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 6: return "Not Found";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}
#endif
