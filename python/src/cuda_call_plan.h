// The arguments of one call of a CUDA kernel (@plait.jit(target="cuda")):
//   - CuPy arrays, PyTorch CUDA tensors, plait.DeviceArray and anything else
//     with __cuda_array_interface__ are used in place (strides included);
//   - NumPy arrays are copied to the GPU before the call and back after it;
//     NumPy arguments whose memory overlaps (views of one array) are copied
//     as one span, each a view of it with its own strides, so that they
//     overlap on the GPU as on the host;
//   - Python and NumPy scalars are passed by value;
//   - sparse matrices (SciPy, cupyx.scipy.sparse, torch sparse tensors) make
//     the classification throw SparseArgument: the call goes through
//     _call_sparse (plait/sparse_calls.py) with each matrix's arrays.
// Classifying the arguments (their type codes, the values the kernel gets,
// which NumPy arrays share a span) needs no GPU, except for the device check
// of a PyTorch or CuPy array; stage() makes the copies. Arrays the kernel
// allocates and returns come back as PyTorch tensors when an argument was a
// tensor, else CuPy arrays when one was a CuPy array, else plait.DeviceArray
// when one was, else NumPy arrays (copied from the GPU). Work is queued on the
// current stream of PyTorch or CuPy when their arrays are passed, else on the
// legacy default stream.
#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "argument_types.h"
#include "cuda_bindings.h"
#include "dispatcher.h"
#include "kernel_object.h"

namespace plait::python {

// Device buffers are at least this aligned; a span copied from a host address
// rounded down to it keeps every element's alignment (and stays within the
// host page of that address).
constexpr uintptr_t kSpanAlignment = 256;

// Registers the classes of plait/cuda.py that the call path makes and
// raises: DeviceArray and CudaUnavailableError.
void set_cuda_classes(nanobind::handle device_array, nanobind::handle unavailable_error);
// Raises CudaUnavailableError naming what is missing when CUDA kernels
// cannot run here; once they can, that holds for the process.
void require_cuda();
// plait.DeviceArray, as registered.
nanobind::handle device_array_class();

class CudaCallPlan {
 public:
  // Classifies the complete arguments of a call (a tuple); raises the
  // TypeError or ValueError of an argument kernels do not take.
  CudaCallPlan(const Dispatcher& d, nanobind::handle args);
  CudaCallPlan(const CudaCallPlan&) = delete;
  CudaCallPlan& operator=(const CudaCallPlan&) = delete;

  // The arguments' type codes (argument_types.h) and their signature text.
  const std::string& key() const { return key_; }
  std::string signature() const { return signature_of(key_); }
  // Whether a NumPy argument is read-only or has a zero stride, so that the
  // call checks it against what the kernel writes (check_writes).
  bool guarded() const { return guarded_; }
  uintptr_t stream() const { return stream_; }
  PyObject* const* args() const { return &PyTuple_GET_ITEM(args_.ptr(), 0); }
  // The slots the entry point reads: until stage() runs, NumPy arguments
  // hold their host addresses.
  std::vector<void*> slot_pointers();

  // Copies the NumPy arguments to the GPU.
  void stage();
  // Copies the NumPy arguments back from the GPU (those that are writeable
  // and not empty).
  void copy_back();
  // The Python value of a call's results (arrays as the caller's kind of
  // array; a borrowed array as the argument it is), in the form the
  // kernel returns: one value, None, a tuple or a list.
  nanobind::object result_values(const KernelPtr& kernel, std::vector<plait_result>& results);

  // For plait/cuda.py's tuning run: the shapes of the array arguments, in
  // order; the values Kernel.call_cuda takes (arrays as (pointer, shape,
  // strides in elements)); and (values, restore) where every array is in a
  // GPU copy of its own, arrays that share memory sharing their copy, and
  // restore() queues a copy of the originals into them again.
  nanobind::list array_shapes() const;
  nanobind::list values() const;
  nanobind::tuple copied_values() const;

 private:
  // A NumPy argument: one GPU copy however often it is passed, either of its
  // own or a view of a span shared with arrays it overlaps.
  struct HostArray {
    PyArrayObject* array;                     // borrowed: args_ holds it
    int span = -1;                            // index in spans_, or -1: a copy of its own
    bool fortran = false;                     // a copy of its own, Fortran-ordered
    plait::Layout layout = plait::Layout::C;  // as the kernel is specialised on it
    int64_t strides[PLAIT_MAX_NDIM] = {};     // element strides on the GPU
    uintptr_t device = 0;                     // its address on the GPU, once staged
  };
  // The bytes [start, end) of host memory that overlapping arrays share,
  // copied to the GPU as one block.
  struct SharedSpan {
    uintptr_t start;
    uintptr_t end;
    std::vector<int> members;  // indices in host_arrays_, in order of address
    uintptr_t device = 0;      // where `start` is on the GPU, once staged
  };

  void classify(const Dispatcher& d, size_t index, PyObject* obj);
  void classify_numpy_scalar(const Dispatcher& d, size_t index, PyObject* obj);
  void classify_torch_tensor(const Dispatcher& d, size_t index, PyObject* obj);
  void classify_cupy_array(const Dispatcher& d, size_t index, PyObject* obj);
  void add_host_array(const Dispatcher& d, size_t index, PyArrayObject* array);
  void add_device_array(const Dispatcher& d, size_t index, const StridedView& view, nanobind::handle dtype, int code);
  void plan_shared_spans();
  void place_host_arrays();
  nanobind::object wrap_array(plait_result& r, const plait::ArrayType& type, std::unique_ptr<DeviceBuffer> buffer);

  nanobind::object args_;
  std::string key_;
  std::vector<ArgSlot> slots_;
  std::vector<int> host_index_;  // per argument: its entry in host_arrays_, or -1
  std::vector<HostArray> host_arrays_;
  std::vector<SharedSpan> spans_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;  // the staged copies, freed with the plan
  bool guarded_ = false;
  bool torch_ = false;
  bool cupy_ = false;
  bool device_arrays_ = false;
  uintptr_t stream_ = 0;
};

// Kernel.call_cuda: a run on the values of copied_values (a tuning run's
// timing); the results are dropped.
void call_cuda_on_values(const Kernel& kernel, nanobind::list values, uintptr_t stream);

// Defines CudaCall (a plan as the tuning run sees it), the registration of
// plait/cuda.py's classes and require_cuda in the module.
void define_cuda_call(nanobind::module_& m);

}  // namespace plait::python
