/* onyx's C API: a stable, versioned ABI over the C++ API (onyx/session.hpp). Pure C99; link with -lonyx.
 *
 * Getting the API
 *   const OnyxApi* api = onyx_get_api(ONYX_API_VERSION);   // NULL: the library is older than this header
 *   The table of function pointers is the stable surface. The plain exported functions (onyx_session_create, ...)
 *   are the same functions and may be called directly by programs built against this exact library.
 *
 * Versioning rules (the ABI contract)
 *   - OnyxApi only grows at its end: members are never removed, reordered, or given another signature or meaning.
 *     Each release that appends members increments ONYX_API_VERSION; the members of version V are commented
 *     "since V".
 *   - onyx_get_api(v) returns the table for every 1 <= v <= ONYX_API_VERSION of the library, and NULL for 0 and for
 *     versions newer than the library. The returned table's `version` is the library's own (>= v), so a caller
 *     built against version v uses only the members of versions <= v and never reads past them.
 *   - Enumerator values are never changed; new ones are only added. OnyxElementType follows ONNX's
 *     TensorProto.DataType numbering. Enumerated types travel as int32_t (a fixed size in the ABI), and any value a
 *     caller passes is checked.
 *   - Handles are opaque: their layout is not part of the ABI.
 *
 * Errors
 *   Every function that can fail returns OnyxStatus*: NULL on success, otherwise a status the caller must release
 *   with onyx_status_release. No C++ exception crosses this API. On failure, out-parameters are left untouched
 *   except where a function says otherwise (onyx_session_run sets every output slot to NULL).
 *
 * Ownership (who frees what)
 *   - Each handle made by a *_create function is owned by the caller and freed with the matching *_release.
 *     *_release accepts NULL.
 *   - Strings returned by onyx (names, messages, string tensor elements) are owned by the handle they come from and
 *     stay valid until that handle is released (or, for a string tensor element, until it is overwritten).
 *   - onyx_tensor_create_with_data does NOT copy: the tensor views the caller's memory, which the caller keeps
 *     alive and unchanged-in-size for as long as the tensor (and any run using it) lives, and frees afterwards.
 *     Outputs of onyx_session_run never point into memory of the tensors fed to that run (onyx copies when an output
 *     would), so outputs may outlive their inputs.
 *   - onyx_tensor_create allocates (zero-filled, 64-byte aligned) memory that onyx owns and frees with the value;
 *     onyx_tensor_mutable_data gives access to it.
 *   - Output values of onyx_session_run are new values owned by the caller; their data is read-only
 *     (onyx_tensor_data). They stay valid after the session is released.
 *
 * Threads
 *   Handles are not internally locked. Use one session per thread, or serialize calls on a session; different
 *   sessions and values are independent. The exception, and its purpose: onyx_run_options_set_terminate may be
 *   called from any thread while a run using those options is in progress.
 */
#ifndef ONYX_ONYX_H
#define ONYX_ONYX_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define ONYX_EXPORT __attribute__((visibility("default")))
#else
#define ONYX_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The newest version of the OnyxApi table this header describes. */
#define ONYX_API_VERSION 4

typedef struct OnyxStatus OnyxStatus;
typedef struct OnyxSessionOptions OnyxSessionOptions;
typedef struct OnyxSession OnyxSession;
typedef struct OnyxRunOptions OnyxRunOptions;
/* A run-time value. Values made by the tensor constructors are tensors; outputs may also be sequences, maps and
 * optionals (onyx_value_kind tells which; the tensor accessors refuse the others). */
typedef struct OnyxValue OnyxValue;

enum OnyxErrorCodeValue {
  ONYX_OK = 0,
  ONYX_ERROR_INVALID_ARGUMENT = 1, /* a bad argument: NULL pointer, bad enum value, size mismatch, unknown or
                                      duplicate input/output name, a feed of the wrong element type or shape */
  ONYX_ERROR_NO_SUCH_FILE = 2,     /* the model path does not exist */
  ONYX_ERROR_INVALID_MODEL = 3,    /* the model cannot be decoded, fails the checker, or cannot be bound/inferred */
  ONYX_ERROR_RUNTIME = 4,          /* a node failed while running (bad data such as an index out of range) */
  ONYX_ERROR_TERMINATED = 5,       /* the run stopped because its run options' terminate flag was set */
  ONYX_ERROR_OUT_OF_MEMORY = 6,    /* the machine's memory, or the session's memory limit, ran out */
  ONYX_ERROR_INTERNAL = 7,         /* anything else; the message says what */
  ONYX_ERROR_TIMEOUT = 8           /* the run passed its run options' timeout (since API version 3) */
};
typedef int32_t OnyxErrorCode; /* an OnyxErrorCodeValue */

/* ONNX's TensorProto.DataType numbers. */
enum OnyxElementTypeValue {
  ONYX_TYPE_UNDEFINED = 0,
  ONYX_TYPE_FLOAT = 1,
  ONYX_TYPE_UINT8 = 2,
  ONYX_TYPE_INT8 = 3,
  ONYX_TYPE_UINT16 = 4,
  ONYX_TYPE_INT16 = 5,
  ONYX_TYPE_INT32 = 6,
  ONYX_TYPE_INT64 = 7,
  ONYX_TYPE_STRING = 8,
  ONYX_TYPE_BOOL = 9,          /* one byte per element, 0 or 1 */
  ONYX_TYPE_FLOAT16 = 10,
  ONYX_TYPE_DOUBLE = 11,
  ONYX_TYPE_UINT32 = 12,
  ONYX_TYPE_UINT64 = 13,
  ONYX_TYPE_COMPLEX64 = 14,    /* (real, imaginary) float pairs */
  ONYX_TYPE_COMPLEX128 = 15,
  ONYX_TYPE_BFLOAT16 = 16,
  ONYX_TYPE_FLOAT8E4M3FN = 17,
  ONYX_TYPE_FLOAT8E4M3FNUZ = 18,
  ONYX_TYPE_FLOAT8E5M2 = 19,
  ONYX_TYPE_FLOAT8E5M2FNUZ = 20,
  ONYX_TYPE_UINT4 = 21,        /* sub-byte types are packed, first element in the low bits, last byte padded */
  ONYX_TYPE_INT4 = 22,
  ONYX_TYPE_FLOAT4E2M1 = 23,
  ONYX_TYPE_FLOAT8E8M0 = 24,
  ONYX_TYPE_UINT2 = 25,
  ONYX_TYPE_INT2 = 26
};
typedef int32_t OnyxElementType; /* an OnyxElementTypeValue */

enum OnyxValueKindValue {
  ONYX_VALUE_UNKNOWN = 0, /* in model inputs/outputs: the model declares no type */
  ONYX_VALUE_TENSOR = 1,
  ONYX_VALUE_SPARSE_TENSOR = 2,
  ONYX_VALUE_SEQUENCE = 3,
  ONYX_VALUE_MAP = 4,
  ONYX_VALUE_OPTIONAL = 5,
  ONYX_VALUE_OPAQUE = 6
};
typedef int32_t OnyxValueKind; /* an OnyxValueKindValue */

/* Selects the model's inputs or outputs in the onyx_session_io_* queries. */
enum OnyxIoValue { ONYX_IO_INPUT = 0, ONYX_IO_OUTPUT = 1 };
typedef int32_t OnyxIo; /* an OnyxIoValue */

/* ---- status ---- */
/* NULL is success: ONYX_OK and the message "". */
ONYX_EXPORT OnyxErrorCode onyx_status_code(const OnyxStatus* status);
/* The message names the model, graph, node and value involved. Owned by the status. */
ONYX_EXPORT const char* onyx_status_message(const OnyxStatus* status);
ONYX_EXPORT void onyx_status_release(OnyxStatus* status);

/* ---- library ---- */
/* "MAJOR.MINOR.PATCH" of the library; static storage. */
ONYX_EXPORT const char* onyx_version_string(void);
/* ONNX's name of an element type ("float", "int64", "float8e4m3fn"); "undefined" for 0 and for values outside the
 * enum. Static storage. */
ONYX_EXPORT const char* onyx_element_type_name(OnyxElementType type);

/* ---- session options (defaults: threads 0 = physical cores, optimization level 3 = all, log level 2) ---- */
ONYX_EXPORT OnyxStatus* onyx_session_options_create(OnyxSessionOptions** out);
/* threads >= 0 (0: one per physical core). */
ONYX_EXPORT OnyxStatus* onyx_session_options_set_threads(OnyxSessionOptions* options, int32_t threads);
/* 0 off, 1 basic, 2 all. */
ONYX_EXPORT OnyxStatus* onyx_session_options_set_optimization_level(OnyxSessionOptions* options, int32_t level);
/* 0 verbose, 1 info, 2 warning, 3 error, 4 fatal. */
ONYX_EXPORT OnyxStatus* onyx_session_options_set_log_level(OnyxSessionOptions* options, int32_t level);
/* Nonzero: load models of a newer IR version or opset of a standard domain than onyx implements (refused by
 * default, ONYX_ERROR_INVALID_MODEL naming what onyx supports); their ops run as the newest versions onyx has. */
ONYX_EXPORT OnyxStatus* onyx_session_options_set_accept_newer_versions(OnyxSessionOptions* options, int32_t accept);
/* The most memory, in MiB, the session's tensors may hold at once (0, the default: no limit; at most 2^40): those
 * its runs allocate, until the caller releases the outputs, and the constants it folds at creation. A run that
 * would pass it fails with ONYX_ERROR_OUT_OF_MEMORY naming the node; its tensors are freed and the session runs
 * again. Kernels' scratch memory is not counted. */
ONYX_EXPORT OnyxStatus* onyx_session_options_set_memory_limit_mb(OnyxSessionOptions* options, uint64_t mb);
/* Adds a shared library of custom ops (onyx/custom_op.h; the path is copied): sessions made with these options load
 * it and bind the ops it registers; a library that cannot be loaded, lacks the entry point or fails in it makes
 * session creation fail with ONYX_ERROR_INVALID_MODEL naming the path. Since API version 4. */
ONYX_EXPORT OnyxStatus* onyx_session_options_add_custom_op_library(OnyxSessionOptions* options, const char* path);
ONYX_EXPORT void onyx_session_options_release(OnyxSessionOptions* options);

/* ---- sessions ---- */
/* Loads, checks and prepares a model file (external data is resolved next to it). `options` may be NULL (defaults);
 * it is copied, so it may be released right after. */
ONYX_EXPORT OnyxStatus* onyx_session_create(const char* path, const OnyxSessionOptions* options, OnyxSession** out);
/* The same from a serialized ModelProto. The bytes are copied: the caller may free them when the call returns.
 * Models with external data cannot be loaded this way. */
ONYX_EXPORT OnyxStatus* onyx_session_create_from_bytes(const void* data, size_t size, const OnyxSessionOptions* options,
                                                       OnyxSession** out);
ONYX_EXPORT void onyx_session_release(OnyxSession* session);

/* The model's inputs and outputs, in graph order. Inputs are those a run must feed: graph inputs that have an
 * initializer are optional, not listed here, and may still be fed by name to replace the initializer. */
ONYX_EXPORT OnyxStatus* onyx_session_io_count(const OnyxSession* session, OnyxIo which, size_t* count);
/* Owned by the session. */
ONYX_EXPORT OnyxStatus* onyx_session_io_name(const OnyxSession* session, OnyxIo which, size_t index,
                                             const char** name);
ONYX_EXPORT OnyxStatus* onyx_session_io_kind(const OnyxSession* session, OnyxIo which, size_t index,
                                             OnyxValueKind* kind);
/* The element type of a tensor or sparse tensor; ONYX_TYPE_UNDEFINED for other kinds or when not declared. */
ONYX_EXPORT OnyxStatus* onyx_session_io_element_type(const OnyxSession* session, OnyxIo which, size_t index,
                                                     OnyxElementType* type);
/* The declared rank; -1 when the model gives no shape (or the value is not a tensor). */
ONYX_EXPORT OnyxStatus* onyx_session_io_rank(const OnyxSession* session, OnyxIo which, size_t index, int64_t* rank);
/* Writes rank entries (capacity must be at least the rank): dims[i] is the size, or -1 when it is not fixed;
 * symbols (may be NULL) receives the dimension's name ("N", "batch"), or "" when it has none (fixed or unknown).
 * The names are owned by the session. */
ONYX_EXPORT OnyxStatus* onyx_session_io_dims(const OnyxSession* session, OnyxIo which, size_t index, int64_t* dims,
                                             const char** symbols, size_t capacity);

/* ---- run options ---- */
ONYX_EXPORT OnyxStatus* onyx_run_options_create(OnyxRunOptions** out);
/* Sets (nonzero) or clears (0) the terminate flag. Safe to call from any thread during a run; the run checks it
 * before each node (subgraph nodes included) and, once set, fails with ONYX_ERROR_TERMINATED. The flag stays set
 * (later runs with these options fail at once) until cleared. */
ONYX_EXPORT OnyxStatus* onyx_run_options_set_terminate(OnyxRunOptions* options, int terminate);
/* A deadline for each run with these options, in milliseconds from the run's start (0, the default: none). It is
 * checked where the terminate flag is and inside long-running kernels; a run past it fails with
 * ONYX_ERROR_TIMEOUT. Must not be called while a run uses the options. */
ONYX_EXPORT OnyxStatus* onyx_run_options_set_timeout_ms(OnyxRunOptions* options, int64_t timeout_ms);
/* Must not be called while a run uses the options. */
ONYX_EXPORT void onyx_run_options_release(OnyxRunOptions* options);

/* ---- running ---- */
/* Runs the model. `inputs[i]` feeds the input named `input_names[i]` (each name at most once; every input the
 * session lists must be fed). The inputs stay owned by the caller and are not modified.
 * `output_names` selects `output_count` outputs in that order; NULL selects all of them in graph order, and then
 * output_count must equal the number of outputs. On success outputs[i] receives a new value owned by the caller; on
 * failure every outputs[i] is set to NULL. `run_options` may be NULL. */
ONYX_EXPORT OnyxStatus* onyx_session_run(const OnyxSession* session, const OnyxRunOptions* run_options,
                                         const char* const* input_names, const OnyxValue* const* inputs,
                                         size_t input_count, const char* const* output_names, size_t output_count,
                                         OnyxValue** outputs);

/* ---- values and tensors ---- */
/* A new tensor in memory onyx allocates and owns: zero-filled (numbers) or empty strings (ONYX_TYPE_STRING).
 * dims[i] >= 0; dims may be NULL when rank is 0 (a scalar). */
ONYX_EXPORT OnyxStatus* onyx_tensor_create(OnyxElementType type, const int64_t* dims, size_t rank, OnyxValue** out);
/* A tensor viewing the caller's memory, without copying. byte_size must be exactly the tensor's size (element
 * count times the element size; packed for sub-byte types), data must be aligned to the element size (at most 8),
 * and may be NULL only when byte_size is 0. The caller keeps ownership: the memory must outlive the tensor and every
 * run it is fed to. Writes by the caller through `data` are seen by later runs. Not for ONYX_TYPE_STRING. */
ONYX_EXPORT OnyxStatus* onyx_tensor_create_with_data(OnyxElementType type, const int64_t* dims, size_t rank,
                                                     void* data, size_t byte_size, OnyxValue** out);
/* A string tensor holding copies of `count` strings (count must equal the element count; row-major order).
 * lengths may be NULL (each string is NUL-terminated); otherwise lengths[i] bytes of strings[i] are taken, which
 * may include NULs. */
ONYX_EXPORT OnyxStatus* onyx_tensor_create_strings(const int64_t* dims, size_t rank, const char* const* strings,
                                                   const size_t* lengths, size_t count, OnyxValue** out);
ONYX_EXPORT void onyx_value_release(OnyxValue* value);

ONYX_EXPORT OnyxStatus* onyx_value_kind(const OnyxValue* value, OnyxValueKind* kind);
/* The tensor accessors fail with ONYX_ERROR_INVALID_ARGUMENT for values that are not tensors. */
ONYX_EXPORT OnyxStatus* onyx_tensor_element_type(const OnyxValue* value, OnyxElementType* type);
ONYX_EXPORT OnyxStatus* onyx_tensor_rank(const OnyxValue* value, size_t* rank);
/* Writes rank entries; capacity must be at least the rank. */
ONYX_EXPORT OnyxStatus* onyx_tensor_dims(const OnyxValue* value, int64_t* dims, size_t capacity);
ONYX_EXPORT OnyxStatus* onyx_tensor_element_count(const OnyxValue* value, size_t* count);
/* Bytes of the data (0 for string tensors). */
ONYX_EXPORT OnyxStatus* onyx_tensor_byte_size(const OnyxValue* value, size_t* size);
/* Read-only data, little-endian and row-major; valid while the value lives. Not for string tensors. May be NULL
 * for an empty tensor. */
ONYX_EXPORT OnyxStatus* onyx_tensor_data(const OnyxValue* value, const void** data);
/* Writable data of a tensor the caller created (onyx_tensor_create, or onyx_tensor_create_with_data, where it is
 * the caller's own pointer). Refused for run outputs, whose memory may be shared (with the model or with other
 * outputs): copy them to modify. Not for string tensors. */
ONYX_EXPORT OnyxStatus* onyx_tensor_mutable_data(OnyxValue* value, void** data);
/* Element `index` (row-major) of a string tensor: a NUL-terminated pointer owned by the value, and its length in
 * bytes (length may be NULL; the string may itself contain NULs). */
ONYX_EXPORT OnyxStatus* onyx_tensor_string(const OnyxValue* value, size_t index, const char** string, size_t* length);
/* Replaces element `index` of a string tensor the caller created with `length` bytes of `string` (copied). */
ONYX_EXPORT OnyxStatus* onyx_tensor_set_string(OnyxValue* value, size_t index, const char* string, size_t length);

/* ---- the versioned table ---- */
typedef struct OnyxApi {
  uint32_t version; /* the library's ONYX_API_VERSION */

  /* since 1 */
  OnyxErrorCode (*status_code)(const OnyxStatus* status);
  const char* (*status_message)(const OnyxStatus* status);
  void (*status_release)(OnyxStatus* status);
  const char* (*version_string)(void);
  const char* (*element_type_name)(OnyxElementType type);

  OnyxStatus* (*session_options_create)(OnyxSessionOptions** out);
  OnyxStatus* (*session_options_set_threads)(OnyxSessionOptions* options, int32_t threads);
  OnyxStatus* (*session_options_set_optimization_level)(OnyxSessionOptions* options, int32_t level);
  OnyxStatus* (*session_options_set_log_level)(OnyxSessionOptions* options, int32_t level);
  void (*session_options_release)(OnyxSessionOptions* options);

  OnyxStatus* (*session_create)(const char* path, const OnyxSessionOptions* options, OnyxSession** out);
  OnyxStatus* (*session_create_from_bytes)(const void* data, size_t size, const OnyxSessionOptions* options,
                                           OnyxSession** out);
  void (*session_release)(OnyxSession* session);
  OnyxStatus* (*session_io_count)(const OnyxSession* session, OnyxIo which, size_t* count);
  OnyxStatus* (*session_io_name)(const OnyxSession* session, OnyxIo which, size_t index, const char** name);
  OnyxStatus* (*session_io_kind)(const OnyxSession* session, OnyxIo which, size_t index, OnyxValueKind* kind);
  OnyxStatus* (*session_io_element_type)(const OnyxSession* session, OnyxIo which, size_t index,
                                         OnyxElementType* type);
  OnyxStatus* (*session_io_rank)(const OnyxSession* session, OnyxIo which, size_t index, int64_t* rank);
  OnyxStatus* (*session_io_dims)(const OnyxSession* session, OnyxIo which, size_t index, int64_t* dims,
                                 const char** symbols, size_t capacity);

  OnyxStatus* (*run_options_create)(OnyxRunOptions** out);
  OnyxStatus* (*run_options_set_terminate)(OnyxRunOptions* options, int terminate);
  void (*run_options_release)(OnyxRunOptions* options);
  OnyxStatus* (*session_run)(const OnyxSession* session, const OnyxRunOptions* run_options,
                             const char* const* input_names, const OnyxValue* const* inputs, size_t input_count,
                             const char* const* output_names, size_t output_count, OnyxValue** outputs);

  OnyxStatus* (*tensor_create)(OnyxElementType type, const int64_t* dims, size_t rank, OnyxValue** out);
  OnyxStatus* (*tensor_create_with_data)(OnyxElementType type, const int64_t* dims, size_t rank, void* data,
                                         size_t byte_size, OnyxValue** out);
  OnyxStatus* (*tensor_create_strings)(const int64_t* dims, size_t rank, const char* const* strings,
                                       const size_t* lengths, size_t count, OnyxValue** out);
  void (*value_release)(OnyxValue* value);
  OnyxStatus* (*value_kind)(const OnyxValue* value, OnyxValueKind* kind);
  OnyxStatus* (*tensor_element_type)(const OnyxValue* value, OnyxElementType* type);
  OnyxStatus* (*tensor_rank)(const OnyxValue* value, size_t* rank);
  OnyxStatus* (*tensor_dims)(const OnyxValue* value, int64_t* dims, size_t capacity);
  OnyxStatus* (*tensor_element_count)(const OnyxValue* value, size_t* count);
  OnyxStatus* (*tensor_byte_size)(const OnyxValue* value, size_t* size);
  OnyxStatus* (*tensor_data)(const OnyxValue* value, const void** data);
  OnyxStatus* (*tensor_mutable_data)(OnyxValue* value, void** data);
  OnyxStatus* (*tensor_string)(const OnyxValue* value, size_t index, const char** string, size_t* length);
  OnyxStatus* (*tensor_set_string)(OnyxValue* value, size_t index, const char* string, size_t length);

  /* since 2 */
  OnyxStatus* (*session_options_set_accept_newer_versions)(OnyxSessionOptions* options, int32_t accept);

  /* since 3 */
  OnyxStatus* (*session_options_set_memory_limit_mb)(OnyxSessionOptions* options, uint64_t mb);
  OnyxStatus* (*run_options_set_timeout_ms)(OnyxRunOptions* options, int64_t timeout_ms);

  /* since 4 */
  OnyxStatus* (*session_options_add_custom_op_library)(OnyxSessionOptions* options, const char* path);
  /* Members of later versions are appended here. */
} OnyxApi;

/* The table for `version` (1..ONYX_API_VERSION of the library), or NULL when the library does not provide it.
 * Static storage; never freed. */
ONYX_EXPORT const OnyxApi* onyx_get_api(uint32_t version);

#ifdef __cplusplus
}
#endif

#endif /* ONYX_ONYX_H */
