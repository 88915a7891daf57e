// ONYX_TARGET_CLONES(targets...): a function built once per target (e.g. "arch=x86-64-v4", "arch=x86-64-v3",
// "default"), the loader picking the best for the CPU through an IFUNC resolver. Under ThreadSanitizer only the
// default is built: the resolver runs during relocation, before TSan's runtime is up, and its instrumented code
// crashes there (scripts/tsan_stress.sh).
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ONYX_NO_TARGET_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define ONYX_NO_TARGET_CLONES 1
#endif

#if defined(ONYX_NO_TARGET_CLONES) || !defined(__x86_64__) || !defined(__linux__)
#define ONYX_TARGET_CLONES(...)
#else
#define ONYX_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#endif
