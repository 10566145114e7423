// A thread with the compiler's own stack (see compiler_stack.h).
#include "support/compiler_stack.h"

#include <pthread.h>

#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

namespace plait {

namespace {

struct Job {
  const std::function<void()>* body;
  std::exception_ptr error;
};

void* run_job(void* argument) {
  auto* job = static_cast<Job*>(argument);
  try {
    (*job->body)();
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

void run_on_compiler_stack(const std::function<void()>& body) {
  pthread_attr_t attributes;
  if (int error = pthread_attr_init(&attributes); error != 0) {
    throw std::runtime_error(std::string("cannot start the compiler's thread: ") + std::strerror(error));
  }
  int error = pthread_attr_setstacksize(&attributes, kCompilerStackBytes);
  Job job{&body, nullptr};
  pthread_t thread;
  if (error == 0) error = pthread_create(&thread, &attributes, run_job, &job);
  pthread_attr_destroy(&attributes);
  if (error != 0) {
    throw std::runtime_error(std::string("cannot start the compiler's thread: ") + std::strerror(error));
  }
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace plait
