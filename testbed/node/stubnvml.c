/*
 * A stub libnvidia-ml.so.1 for tests: the NVML entry points the exporter's backend calls,
 * driven by a text scenario named in $GUARDIAN_STUB_NVML_SCENARIO. The real nvidia-ml-py
 * loads it like the driver's library. The file is re-read by nvmlInit and whenever its
 * content has changed when nvmlDeviceGetCount_v2 starts a collection cycle.
 *
 * File format, one record per line ('#' starts a comment):
 *   init <rc>                                   nvmlInitWithFlags returns rc
 *   driver <version>
 *   gpu <uuid> <total> <used> <util%> <temp> <power_mW> <energy_mJ> <name...>
 *   mig <uuid> <total> <used> <name...>         MIG device of the last gpu (enables MIG mode)
 *   proc <uuid> <c|g|m> <pid> <bytes|na>        compute, graphics or MPS process
 *   putil <uuid> <pid> <ts_us> <sm%>            one process utilization sample
 *   sample <uuid> <ts_us> <util%>               one GPU utilization sample
 *   fail <function> <uuid|*> <rc> [<after>]     calls after the first <after> return rc
 *   hang <function> <uuid|*> <milliseconds>     calls sleep first (a hung driver call)
 *   grow <uuid> <extra>                         the next process-list copy finds <extra> more
 *                                               processes than the caller's buffer holds, once
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEV 64
#define MAX_PROC 4096
#define MAX_SAMPLES 8192
#define MAX_RULES 64
#define MAX_TEXT (1 << 20)

typedef int nvmlReturn_t;
enum {
    OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6,
    INSUFFICIENT_SIZE = 7, UNKNOWN = 999
};

typedef struct dev {
    char uuid[96];
    char name[96];
    unsigned long long total, used, energy;
    unsigned util, temp, power;
    int is_mig, mig_enabled, parent, n_mig;
    struct dev *migs[8];
} dev_t_;
typedef dev_t_ *nvmlDevice_t;

typedef struct { int dev; char kind; unsigned pid; unsigned long long mem; } proc_t_;
typedef struct { int dev; unsigned pid; unsigned long long ts; unsigned sm; } putil_t_;
typedef struct { int dev; unsigned long long ts; unsigned value; } sample_t_;
typedef struct {
    char fn[80]; int dev; /* -1: any */ int rc; long after; long calls; long hang_ms; int grow;
} rule_t_;

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    unsigned version; unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct { unsigned version; int sensorType; int temperature; } nvmlTemperature_t;
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;
typedef union {
    double dVal; unsigned uiVal; unsigned long ulVal; unsigned long long ullVal;
    long long sllVal; int siVal; unsigned short usVal;
} nvmlValue_t;
typedef struct { unsigned long long timeStamp; nvmlValue_t sampleValue; } nvmlSample_t;
typedef struct {
    unsigned pid; unsigned long long usedGpuMemory; unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
    unsigned pid; unsigned long long timeStamp; unsigned smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {
    unsigned long long timeStamp; unsigned pid, smUtil, memUtil, encUtil, decUtil, jpgUtil, ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;
typedef struct {
    unsigned version, processSamplesCount; unsigned long long lastSeenTimeStamp;
    nvmlProcessUtilizationInfo_v1_t *procUtilArray;
} nvmlProcessesUtilizationInfo_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char loaded_text[MAX_TEXT];
static int initialised, init_rc;
static char driver[80] = "550.54.15";
static dev_t_ devs[MAX_DEV];
static int n_devs, n_top;
static int top[MAX_DEV];
static proc_t_ procs[MAX_PROC];
static int n_procs;
static putil_t_ putils[MAX_SAMPLES];
static int n_putils;
static sample_t_ samples[MAX_SAMPLES];
static int n_samples;
static rule_t_ rules[MAX_RULES];
static int n_rules;

static int dev_index(const char *uuid) {
    for (int i = 0; i < n_devs; i++)
        if (strcmp(devs[i].uuid, uuid) == 0) return i;
    return -2;
}

static void rest_of_line(char *dst, size_t size, const char *src) {
    while (*src == ' ' || *src == '\t') src++;
    snprintf(dst, size, "%s", src);
    size_t n = strlen(dst);
    while (n && (dst[n - 1] == '\n' || dst[n - 1] == '\r')) dst[--n] = 0;
}

static void parse(char *text) {
    n_devs = n_top = n_procs = n_putils = n_samples = n_rules = 0;
    init_rc = OK;
    memset(devs, 0, sizeof devs);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char kw[16], a[96], b[96];
        int off = 0;
        if (line[0] == '#' || sscanf(line, "%15s%n", kw, &off) != 1) continue;
        char *rest = line + off;
        if (!strcmp(kw, "init")) {
            sscanf(rest, "%d", &init_rc);
        } else if (!strcmp(kw, "driver")) {
            sscanf(rest, "%79s", driver);
        } else if (!strcmp(kw, "gpu") && n_devs < MAX_DEV) {
            dev_t_ *d = &devs[n_devs];
            int n = 0;
            sscanf(rest, "%95s %llu %llu %u %u %u %llu%n", d->uuid, &d->total, &d->used,
                   &d->util, &d->temp, &d->power, &d->energy, &n);
            rest_of_line(d->name, sizeof d->name, rest + n);
            top[n_top++] = n_devs++;
        } else if (!strcmp(kw, "mig") && n_devs < MAX_DEV && n_top > 0) {
            dev_t_ *parent = &devs[top[n_top - 1]];
            dev_t_ *d = &devs[n_devs];
            int n = 0;
            sscanf(rest, "%95s %llu %llu%n", d->uuid, &d->total, &d->used, &n);
            rest_of_line(d->name, sizeof d->name, rest + n);
            d->is_mig = 1;
            d->parent = top[n_top - 1];
            parent->mig_enabled = 1;
            if (parent->n_mig < 8) parent->migs[parent->n_mig++] = d;
            n_devs++;
        } else if (!strcmp(kw, "proc") && n_procs < MAX_PROC) {
            proc_t_ *p = &procs[n_procs];
            char kind[4];
            if (sscanf(rest, "%95s %3s %u %95s", a, kind, &p->pid, b) != 4) continue;
            p->dev = dev_index(a);
            p->kind = kind[0];
            p->mem = strcmp(b, "na") == 0 ? ~0ULL : strtoull(b, NULL, 10);
            n_procs++;
        } else if (!strcmp(kw, "putil") && n_putils < MAX_SAMPLES) {
            putil_t_ *s = &putils[n_putils];
            if (sscanf(rest, "%95s %u %llu %u", a, &s->pid, &s->ts, &s->sm) != 4) continue;
            s->dev = dev_index(a);
            n_putils++;
        } else if (!strcmp(kw, "sample") && n_samples < MAX_SAMPLES) {
            sample_t_ *s = &samples[n_samples];
            if (sscanf(rest, "%95s %llu %u", a, &s->ts, &s->value) != 3) continue;
            s->dev = dev_index(a);
            n_samples++;
        } else if ((!strcmp(kw, "fail") || !strcmp(kw, "hang") || !strcmp(kw, "grow")) &&
                   n_rules < MAX_RULES) {
            rule_t_ *r = &rules[n_rules];
            memset(r, 0, sizeof *r);
            long x = 0, y = 0;
            if (!strcmp(kw, "grow")) {
                if (sscanf(rest, "%95s %ld", a, &x) != 2) continue;
                strcpy(r->fn, "*processes*");
                r->grow = (int)x;
            } else {
                int got = sscanf(rest, "%79s %95s %ld %ld", r->fn, a, &x, &y);
                if (got < 3) continue;
                if (!strcmp(kw, "fail")) { r->rc = (int)x; r->after = got == 4 ? y : 0; }
                else r->hang_ms = x;
            }
            r->dev = strcmp(a, "*") == 0 ? -1 : dev_index(a);
            n_rules++;
        }
    }
}

/* Re-read the scenario; with `only_if_changed`, keep state (call counts) when it is unchanged. */
static void load(int only_if_changed) {
    static char buf[MAX_TEXT];
    const char *path = getenv("GUARDIAN_STUB_NVML_SCENARIO");
    if (!path) return;
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t n = fread(buf, 1, MAX_TEXT - 1, f);
    fclose(f);
    buf[n] = 0;
    if (only_if_changed && strcmp(buf, loaded_text) == 0) return;
    memcpy(loaded_text, buf, n + 1);
    parse(buf);
}

/* The return code injected for this call, after any injected hang; OK when none applies. */
static nvmlReturn_t inject(const char *fn, nvmlDevice_t dev) {
    int idx = dev ? (int)(dev - devs) : -1;
    long hang = 0;
    nvmlReturn_t rc = OK;
    for (int i = 0; i < n_rules; i++) {
        rule_t_ *r = &rules[i];
        if (strcmp(r->fn, fn) != 0 || (r->dev != -1 && r->dev != idx)) continue;
        if (r->hang_ms) { hang = r->hang_ms; continue; }
        if (++r->calls > r->after && rc == OK) rc = r->rc;
    }
    if (hang) {
        pthread_mutex_unlock(&lock);
        struct timespec ts = {hang / 1000, (hang % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&lock);
    }
    return rc;
}

#define ENTER(fn, dev)                                            \
    pthread_mutex_lock(&lock);                                    \
    nvmlReturn_t rc_ = initialised ? inject(fn, dev) : UNINITIALIZED; \
    if (rc_ != OK) { pthread_mutex_unlock(&lock); return rc_; }
#define LEAVE(rc) do { pthread_mutex_unlock(&lock); return (rc); } while (0)

nvmlReturn_t nvmlInitWithFlags(unsigned flags) {
    (void)flags;
    pthread_mutex_lock(&lock);
    load(0);
    nvmlReturn_t rc = init_rc != OK ? init_rc : inject("nvmlInitWithFlags", NULL);
    if (rc == OK) initialised++;
    pthread_mutex_unlock(&lock);
    return rc;
}
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&lock);
    if (!initialised) LEAVE(UNINITIALIZED);
    initialised--;
    LEAVE(OK);
}

const char *nvmlErrorString(nvmlReturn_t rc) {
    static char text[32];
    snprintf(text, sizeof text, "stub NVML error %d", rc);
    return text;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length) {
    ENTER("nvmlSystemGetDriverVersion", NULL);
    snprintf(version, length, "%s", driver);
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) {
    pthread_mutex_lock(&lock);
    if (initialised) load(1);
    pthread_mutex_unlock(&lock);
    ENTER("nvmlDeviceGetCount_v2", NULL);
    *count = (unsigned)n_top;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *device) {
    ENTER("nvmlDeviceGetHandleByIndex_v2", NULL);
    if (index >= (unsigned)n_top) LEAVE(INVALID_ARGUMENT);
    *device = &devs[top[index]];
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned length) {
    ENTER("nvmlDeviceGetUUID", dev);
    snprintf(uuid, length, "%s", dev->uuid);
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned length) {
    ENTER("nvmlDeviceGetName", dev);
    snprintf(name, length, "%s", dev->name);
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned *current, unsigned *pending) {
    ENTER("nvmlDeviceGetMigMode", dev);
    *current = *pending = (unsigned)dev->mig_enabled;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned *count) {
    ENTER("nvmlDeviceGetMaxMigDeviceCount", dev);
    *count = dev->mig_enabled ? 7 : 0;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned i, nvmlDevice_t *mig) {
    ENTER("nvmlDeviceGetMigDeviceHandleByIndex", dev);
    if (!dev->mig_enabled || i >= 7) LEAVE(INVALID_ARGUMENT);
    if (i >= (unsigned)dev->n_mig) LEAVE(NOT_FOUND);
    *mig = dev->migs[i];
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m) {
    ENTER("nvmlDeviceGetMemoryInfo", dev);
    m->total = dev->total; m->used = dev->used; m->free = dev->total - dev->used;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m) {
    ENTER("nvmlDeviceGetMemoryInfo_v2", dev);
    m->total = dev->total; m->used = dev->used; m->reserved = 0;
    m->free = dev->total - dev->used;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t dev, nvmlTemperature_t *t) {
    ENTER("nvmlDeviceGetTemperatureV", dev);
    if (t->sensorType != 0) LEAVE(INVALID_ARGUMENT);
    t->temperature = (int)dev->temp;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *temp) {
    ENTER("nvmlDeviceGetTemperature", dev);
    if (sensor != 0) LEAVE(INVALID_ARGUMENT);
    *temp = dev->temp;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw) {
    ENTER("nvmlDeviceGetPowerUsage", dev);
    *mw = dev->power;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj) {
    ENTER("nvmlDeviceGetTotalEnergyConsumption", dev);
    *mj = dev->energy;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u) {
    ENTER("nvmlDeviceGetUtilizationRates", dev);
    if (dev->is_mig || dev->mig_enabled) LEAVE(NOT_SUPPORTED);
    u->gpu = dev->util; u->memory = 0;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t dev, int type, unsigned long long last,
                                  int *value_type, unsigned *count, nvmlSample_t *out) {
    ENTER("nvmlDeviceGetSamples", dev);
    if (type != 1) LEAVE(NOT_SUPPORTED);
    int idx = (int)(dev - devs);
    unsigned n = 0;
    *value_type = 1; /* unsigned int */
    for (int i = 0; i < n_samples; i++) {
        if (samples[i].dev != idx || samples[i].ts <= last) continue;
        if (out) {
            if (n >= *count) break;
            out[n].timeStamp = samples[i].ts;
            out[n].sampleValue.uiVal = samples[i].value;
        }
        n++;
    }
    if (n == 0 && !out) LEAVE(NOT_FOUND);
    *count = n;
    LEAVE(OK);
}

static nvmlReturn_t list_processes(const char *fn, char kind, nvmlDevice_t dev, unsigned *count,
                                   nvmlProcessInfo_t *out) {
    ENTER(fn, dev);
    int idx = (int)(dev - devs);
    unsigned n = 0;
    for (int i = 0; i < n_procs; i++)
        if (procs[i].dev == idx && procs[i].kind == kind) n++;
    if (!out) {
        *count = n;
        LEAVE(n ? INSUFFICIENT_SIZE : OK);
    }
    for (int i = 0; i < n_rules; i++) {
        rule_t_ *r = &rules[i];
        if (r->grow && strcmp(r->fn, "*processes*") == 0 && (r->dev == -1 || r->dev == idx)) {
            /* Processes started between the size query and this copy. */
            unsigned grown = n + (unsigned)r->grow;
            r->grow = 0;
            if (grown > *count) { *count = grown; LEAVE(INSUFFICIENT_SIZE); }
        }
    }
    if (n > *count) { *count = n; LEAVE(INSUFFICIENT_SIZE); }
    unsigned k = 0;
    for (int i = 0; i < n_procs; i++) {
        if (procs[i].dev != idx || procs[i].kind != kind) continue;
        out[k].pid = procs[i].pid;
        out[k].usedGpuMemory = procs[i].mem;
        out[k].gpuInstanceId = out[k].computeInstanceId = dev->is_mig ? 1 : 0xFFFFFFFFu;
        k++;
    }
    *count = k;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *c, nvmlProcessInfo_t *p) {
    return list_processes("nvmlDeviceGetComputeRunningProcesses_v3", 'c', d, c, p);
}
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned *c, nvmlProcessInfo_t *p) {
    return list_processes("nvmlDeviceGetGraphicsRunningProcesses_v3", 'g', d, c, p);
}
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *c, nvmlProcessInfo_t *p) {
    return list_processes("nvmlDeviceGetMPSComputeRunningProcesses_v3", 'm', d, c, p);
}

static unsigned newer_putils(int idx, unsigned long long last) {
    unsigned n = 0;
    for (int i = 0; i < n_putils; i++)
        if (putils[i].dev == idx && putils[i].ts > last) n++;
    return n;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *out,
                                             unsigned *count, unsigned long long last) {
    ENTER("nvmlDeviceGetProcessUtilization", dev);
    if (dev->is_mig) LEAVE(NOT_SUPPORTED);
    int idx = (int)(dev - devs);
    unsigned n = newer_putils(idx, last);
    if (n == 0) LEAVE(NOT_FOUND);
    if (!out || *count < n) { *count = n; LEAVE(INSUFFICIENT_SIZE); }
    unsigned k = 0;
    for (int i = 0; i < n_putils; i++) {
        if (putils[i].dev != idx || putils[i].ts <= last) continue;
        memset(&out[k], 0, sizeof out[k]);
        out[k].pid = putils[i].pid; out[k].timeStamp = putils[i].ts; out[k].smUtil = putils[i].sm;
        k++;
    }
    *count = k;
    LEAVE(OK);
}

nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t dev,
                                                   nvmlProcessesUtilizationInfo_t *info) {
    ENTER("nvmlDeviceGetProcessesUtilizationInfo", dev);
    if (dev->is_mig) LEAVE(NOT_SUPPORTED);
    if (info->version != 0x01000018) LEAVE(22 + 3); /* ARGUMENT_VERSION_MISMATCH */
    int idx = (int)(dev - devs);
    unsigned long long last = info->lastSeenTimeStamp;
    unsigned n = newer_putils(idx, last);
    if (n == 0) LEAVE(NOT_FOUND);
    if (!info->procUtilArray || info->processSamplesCount < n) {
        info->processSamplesCount = n;
        LEAVE(INSUFFICIENT_SIZE);
    }
    unsigned k = 0;
    for (int i = 0; i < n_putils; i++) {
        if (putils[i].dev != idx || putils[i].ts <= last) continue;
        nvmlProcessUtilizationInfo_v1_t *o = &info->procUtilArray[k++];
        memset(o, 0, sizeof *o);
        o->pid = putils[i].pid; o->timeStamp = putils[i].ts; o->smUtil = putils[i].sm;
    }
    info->processSamplesCount = k;
    LEAVE(OK);
}
