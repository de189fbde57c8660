#pragma once
// The standard streams as a shell hands them over: maybe closed (`<&-`), maybe a full disk or
// a pipe whose reader has gone. run_app (app_main.hpp) uses these, so every program:
// - opens /dev/null on each of descriptors 0, 1 and 2 that is closed, before it opens
//   anything else (else the first file opened, say model.safetensors, would become stdin);
// - checks its writes to stdout, and the final flush and close, and fails with a message
//   naming the error instead of exiting 0 with the output lost.

#include <cstdio>
#include <string_view>

namespace vkf::app {

// Opens /dev/null on whichever of descriptors 0, 1 and 2 is closed. Call first thing in main.
void ensure_standard_descriptors();

// Flushes `out` (stdout unless told) and throws vkf::Error naming the stream and the error
// when that or an earlier write failed: output that goes nowhere stops the work early.
void flush_checked(std::FILE* out = stdout);

// Writes `text` to `out`, flushes, and throws as flush_checked does.
void write_checked(std::string_view text, std::FILE* out = stdout);

// At the end of a program: flushes and closes stdout. Returns the error's message, or an
// empty string when everything written reached its destination.
std::string_view close_stdout();

}  // namespace vkf::app
