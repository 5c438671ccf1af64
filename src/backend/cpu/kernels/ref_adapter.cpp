// The primitives the cpu backend does not specialise run the ref backend's kernels (layout copies,
// casts, gathers, reductions, the remaining elementwise ops, row writes): they are off the hot
// path of every supported model and the ref code is their definition. They run on the caller's
// thread. The kernel table lists them under the scalar tier with "(ref)".
#include "backend/cpu/kernels/kernels.h"
#include "backend/ref/kernel.h"

namespace glass::backend::cpu::kernels {

const RefKernel kRefElementwise{ref::elementwise};
const RefKernel kRefReduce{ref::reduce};
const RefKernel kRefCopyLayout{ref::copy_layout};
const RefKernel kRefGather{ref::gather};
const RefKernel kRefCast{ref::cast};
const RefKernel kRefWriteRows{ref::write_rows};
const RefKernel kRefGatherBlocks{ref::gather_blocks};

Status ref_kernel(const KernelArgs& a) {
  auto view = [](const TensorView& t) { return ref::TensorRef{t.data, t.ext, t.dtype}; };
  ref::KernelArgs ra{a.node, view(a.out), {}, &a.bind, nullptr, a.rows_written};
  for (size_t i = 0; i < a.node.inputs.size(); ++i) ra.in[i] = view(a.in[i]);
  return data_of<RefKernel>(a.data).fn(ra);
}

}  // namespace glass::backend::cpu::kernels
