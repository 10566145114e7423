// Loading compiled kernels (dlopen) and finding their entry points.
#pragma once

#include <memory>
#include <string>

namespace plait {

// A loaded shared object; unloaded (dlclose) when the last reference goes.
class LoadedLibrary {
 public:
  // Throws InternalError with dlerror()'s text when loading fails.
  static std::shared_ptr<LoadedLibrary> open(const std::string& path);
  ~LoadedLibrary();
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;

  // The address of `name`, or nullptr.
  void* symbol(const char* name) const;
  const std::string& path() const { return path_; }

 private:
  LoadedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

}  // namespace plait
