// Loading compiled kernels with dlopen.
#include "jit/loader.h"

#include <dlfcn.h>

#include "support/diagnostics.h"

namespace plait {

namespace {

// OpenMP's runtime must outlive every kernel: if the last kernel that pulled
// libgomp in were unloaded, libgomp would go with it while its worker threads
// still run, and the process would crash. Loading it once, for good, before
// the first kernel prevents that.
void pin_openmp_runtime() {
  static const bool pinned = [] {
    return ::dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) != nullptr;
  }();
  (void)pinned;
}

}  // namespace

std::shared_ptr<LoadedLibrary> LoadedLibrary::open(const std::string& path) {
  pin_openmp_runtime();
  // RTLD_LOCAL keeps each kernel's symbols (they all export the same entry
  // name) out of the global namespace; RTLD_NOW reports missing symbols here
  // rather than at the first call.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = ::dlerror();
    PLAIT_INTERNAL_ERROR("cannot load '" + path + "': " + (error ? error : "unknown dlopen error"));
  }
  return std::shared_ptr<LoadedLibrary>(new LoadedLibrary(handle, path));
}

LoadedLibrary::~LoadedLibrary() { ::dlclose(handle_); }

void* LoadedLibrary::symbol(const char* name) const { return ::dlsym(handle_, name); }

}  // namespace plait
