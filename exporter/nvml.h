/*
 * nvml — the slice of NVIDIA's management library the exporter calls, loaded with dlopen.
 *
 * No NVIDIA header is needed to build fracgpu: the types below restate the public NVML C API
 * (nvml.h of CUDA 11/12) for exactly the entry points the exporter uses, with their real names,
 * signatures and struct layouts, including the versioned structs (NVML_STRUCT_VERSION puts the
 * struct size in the low 24 bits and the version in the top 8). The same declarations are what
 * e2e/fake-nvml implements, so the fake and the real library are interchangeable.
 *
 * fg_nvml_open resolves every symbol into a table of function pointers. Entry points that newer
 * drivers added (memory info v2, MPS process lists, MIG) are optional: a NULL pointer means "this
 * driver does not have it" and the caller degrades. The compute-mode, index and minor-number calls
 * (which the capacity holder uses, nodeagent/holder) are optional in the table too, so that a library
 * without them still serves the exporter. Ownership: the table owns the dlopen handle; fg_nvml_close
 * shuts NVML down (when it was initialised) and unloads the library.
 */
#ifndef FG_EXPORTER_NVML_H
#define FG_EXPORTER_NVML_H

#include <stdbool.h>

#include "base/err.h"

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

#define NVML_STRUCT_VERSION(data, ver) (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((ver) << 24U))

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96

/* nvmlDeviceGetMemoryInfo (v1): no reserved field; used includes the driver's reservation. */
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

/* nvmlDeviceGetMemoryInfo_v2: the driver's reservation reported apart from `used`. */
typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef struct nvmlUtilization_st {
    unsigned int gpu;      /* percent of the sample period during which a kernel ran */
    unsigned int memory;   /* percent of the period the memory was read or written */
} nvmlUtilization_t;

/* The v1 entry (drivers before 510) that some drivers still write through the v2/v3 calls. */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* The entry of nvmlDeviceGetComputeRunningProcesses_v3 / ..._v2 (same layout). */
typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;   /* NVML_VALUE_NOT_AVAILABLE when unknown */
    unsigned int gpuInstanceId;         /* 0xFFFFFFFF when not on MIG */
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;
typedef nvmlProcessInfo_v2_t nvmlProcessInfo_t;

#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp;   /* CPU timestamp, microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

/* GPM (Hopper and later): whether the device can report per-instance compute. */
typedef struct nvmlGpmSupport_st {
    unsigned int version;             /* NVML_GPM_SUPPORT_VERSION */
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1

/* GPM samples are opaque; a metric is computed from two of them taken some time apart. */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

typedef enum nvmlGpmMetricId_enum {
    NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
    NVML_GPM_METRIC_SM_UTIL = 2,   /* percent of SMs busy, averaged over the interval */
} nvmlGpmMetricId_t;

typedef struct {
    char *shortName;
    char *longName;
    char *unit;
} nvmlGpmMetricInfo_t;

typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    nvmlGpmMetricInfo_t metricInfo;
} nvmlGpmMetric_t;

/* The header sizes metrics[] as NVML_GPM_METRIC_MAX, which grows between releases; the library reads
 * only numMetrics entries, so the exporter declares the few it asks for. */
#define FG_NVML_GPM_METRICS 1
typedef struct {
    unsigned int version;         /* NVML_GPM_METRICS_GET_VERSION */
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[FG_NVML_GPM_METRICS];
} nvmlGpmMetricsGet_t;
#define NVML_GPM_METRICS_GET_VERSION 1

/* A device's compute mode (nvmlDeviceGetComputeMode / nvmlDeviceSetComputeMode). EXCLUSIVE_PROCESS
 * lets one process (an MPS server, which then serves many clients) hold a context on the device;
 * changing it needs root. EXCLUSIVE_THREAD is deprecated and refused by current drivers. */
typedef enum nvmlComputeMode_enum {
    NVML_COMPUTEMODE_DEFAULT = 0,
    NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
    NVML_COMPUTEMODE_PROHIBITED = 2,
    NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
    NVML_COMPUTEMODE_COUNT
} nvmlComputeMode_t;

/* The entry points, as the real library exports them. The exporter never links these names (it
 * resolves them with dlsym into struct fg_nvml); they are declared so that e2e/fake-nvml implements
 * exactly these signatures. */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                        nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id);
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet);
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode);
nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber);

/* Process list getters share one signature. */
typedef nvmlReturn_t fg_nvml_proc_fn(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos);

/* The resolved entry points. Required ones are never NULL after fg_nvml_open; optional ones may be. */
struct fg_nvml {
    void *dl;
    bool initialised;
    nvmlReturn_t (*init)(void);                                             /* nvmlInit_v2 */
    nvmlReturn_t (*shutdown)(void);                                         /* nvmlShutdown */
    const char *(*error_string)(nvmlReturn_t r);                            /* nvmlErrorString */
    nvmlReturn_t (*get_count)(unsigned int *n);                             /* nvmlDeviceGetCount_v2 */
    nvmlReturn_t (*get_handle)(unsigned int i, nvmlDevice_t *dev);          /* nvmlDeviceGetHandleByIndex_v2 */
    nvmlReturn_t (*get_uuid)(nvmlDevice_t dev, char *uuid, unsigned int len);
    nvmlReturn_t (*get_name)(nvmlDevice_t dev, char *name, unsigned int len);
    nvmlReturn_t (*get_memory)(nvmlDevice_t dev, nvmlMemory_t *mem);
    nvmlReturn_t (*get_memory_v2)(nvmlDevice_t dev, nvmlMemory_v2_t *mem); /* optional */
    nvmlReturn_t (*get_utilization)(nvmlDevice_t dev, nvmlUtilization_t *u);
    fg_nvml_proc_fn *get_compute_procs;                                     /* _v3, else _v2 */
    fg_nvml_proc_fn *get_mps_procs;                                         /* optional */
    nvmlReturn_t (*get_process_utilization)(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *s,
                                            unsigned int *count, unsigned long long last_seen);
    nvmlReturn_t (*get_mig_mode)(nvmlDevice_t dev, unsigned int *cur, unsigned int *pending); /* optional */
    nvmlReturn_t (*get_max_mig_count)(nvmlDevice_t dev, unsigned int *n);                    /* optional */
    nvmlReturn_t (*get_mig_handle)(nvmlDevice_t dev, unsigned int i, nvmlDevice_t *mig);     /* optional */
    nvmlReturn_t (*get_gpu_instance_id)(nvmlDevice_t dev, unsigned int *id);                 /* optional */
    nvmlReturn_t (*gpm_query_support)(nvmlDevice_t dev, nvmlGpmSupport_t *s);                /* optional */
    nvmlReturn_t (*gpm_sample_alloc)(nvmlGpmSample_t *s);                                    /* optional */
    nvmlReturn_t (*gpm_sample_free)(nvmlGpmSample_t s);                                      /* optional */
    nvmlReturn_t (*gpm_mig_sample_get)(nvmlDevice_t dev, unsigned int gi, nvmlGpmSample_t s); /* optional */
    nvmlReturn_t (*gpm_metrics_get)(nvmlGpmMetricsGet_t *m);                                 /* optional */
    nvmlReturn_t (*get_compute_mode)(nvmlDevice_t dev, nvmlComputeMode_t *mode);             /* optional */
    nvmlReturn_t (*set_compute_mode)(nvmlDevice_t dev, nvmlComputeMode_t mode);              /* optional */
    nvmlReturn_t (*get_index)(nvmlDevice_t dev, unsigned int *index);                        /* optional */
    nvmlReturn_t (*get_minor_number)(nvmlDevice_t dev, unsigned int *minor);                 /* optional */
};

/* dlopens `path` (NULL: libnvidia-ml.so.1), resolves the table and calls nvmlInit_v2. FG_E_IO when the
 * library cannot be loaded, FG_E_UNSUPPORTED when a required symbol is missing, FG_E_CONNECT when
 * nvmlInit fails (no driver); errmsg says which. On failure nothing stays loaded. */
enum fg_err fg_nvml_open(const char *path, struct fg_nvml *nv, char *errmsg) FG_MUST_USE;
/* Shuts NVML down and unloads it; the struct is zeroed. Safe on a zeroed struct. */
void fg_nvml_close(struct fg_nvml *nv);
/* NVML's text for r (never NULL, also when the library is not loaded). */
const char *fg_nvml_strerror(const struct fg_nvml *nv, nvmlReturn_t r);
/* "DEFAULT", "EXCLUSIVE_PROCESS", ... as nvidia-smi -q names them; "UNKNOWN" out of range. */
const char *fg_nvml_compute_mode_name(nvmlComputeMode_t mode);

#endif
