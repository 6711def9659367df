// A C++17 host of tirx, the way an inference server would use it: <tirx.h> from C++, the
// TIRX_EXPRS/TIRX_DIMS argument macros, RAII owners for the runtime and the kernel, a stream
// the runtime made (no CUDA header or libcuda link needed), tirx_launch_ex's information for
// the log. Without a GPU it builds and compiles the kernel with NVRTC and says no GPU is there.
#include <tirx.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace {

struct runtime_deleter {
  void operator()(tirx_runtime *rt) const { tirx_runtime_destroy(rt); }
};
struct kernel_deleter {
  void operator()(tirx_kernel *k) const { tirx_kernel_release(k); }
};
using runtime_ptr = std::unique_ptr<tirx_runtime, runtime_deleter>;
using kernel_ptr = std::unique_ptr<tirx_kernel, kernel_deleter>;

int fail(const char *what) {
  std::fprintf(stderr, "cpp_host: %s: %s\n", what, tirx_last_error());
  return 1;
}

// y[i] = a * x[i] + y[i] over a 2-D [rows, cols] tensor, with a shared-memory tile declared
// through TIRX_DIMS to show that the macro compiles as C++.
kernel_ptr build_axpy() {
  tirx_builder *b = tirx_builder_create("cpp_axpy");
  tirx_expr *rows = tirx_param_int(b, "rows", TIRX_I64);
  tirx_expr *cols = tirx_param_int(b, "cols", TIRX_I64);
  tirx_expr *a = tirx_param_scalar(b, "a", TIRX_F32);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(rows, cols), nullptr);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(rows, cols), nullptr);
  tirx_set_block(b, 128, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, cols, tirx_int(b, 128)), rows, nullptr);
  tirx_tensor *tile = tirx_alloc_shared(b, "tile", TIRX_F32, TIRX_DIMS(128), nullptr);
  (void)tile;
  tirx_expr *r = tirx_let(b, "r", tirx_block_idx(b, 1));
  tirx_expr *c = tirx_let(b, "c", tirx_add(b, tirx_mul(b, tirx_block_idx(b, 0), tirx_int(b, 128)),
                                          tirx_thread_idx(b, 0)));
  tirx_if_begin(b, tirx_lt(b, c, cols));
  tirx_store(b, y, TIRX_EXPRS(r, c),
             tirx_add(b, tirx_mul(b, a, tirx_load(b, x, TIRX_EXPRS(r, c))),
                      tirx_load(b, y, TIRX_EXPRS(r, c))));
  tirx_if_end(b);
  tirx_kernel *k = nullptr;
  if (tirx_kernel_build(b, &k) != TIRX_OK)
    std::fprintf(stderr, "cpp_host: build: %s\n", tirx_builder_error(b));
  tirx_builder_destroy(b);
  return kernel_ptr(k);
}

} // namespace

int main() {
  tirx_runtime *raw = nullptr;
  tirx_runtime_options o{};
  o.capture_policy = TIRX_CAPTURE_REFUSE; // a server captures graphs only after warming up
  if (tirx_runtime_create(&o, &raw) != TIRX_OK)
    return fail("tirx_runtime_create");
  runtime_ptr rt(raw);
  kernel_ptr k = build_axpy();
  if (!k)
    return 1;
  tirx_compiled *compiled = nullptr;
  if (tirx_compile(rt.get(), k.get(), nullptr, &compiled) != TIRX_OK)
    return fail("tirx_compile");
  size_t cubin = 0;
  tirx_compiled_cubin(compiled, &cubin);
  std::printf("tirx %s: compiled %s for %s (%zu bytes of cubin)\n", tirx_version(),
              tirx_compiled_entry(compiled), tirx_compiled_arch(compiled), cubin);
  tirx_compiled_destroy(compiled);
  if (!tirx_runtime_has_device(rt.get())) {
    std::printf("no GPU: %s\n", tirx_runtime_device_error(rt.get()));
    return 0;
  }

  const int64_t rows = 3, cols = 1000;
  const size_t n = size_t(rows * cols), bytes = n * sizeof(float);
  std::vector<float> hx(n), hy(n), out(n);
  for (size_t i = 0; i < n; i++) {
    hx[i] = float(i % 17) * 0.25f;
    hy[i] = float(i % 5) - 2.0f;
  }
  void *stream = nullptr, *dx = nullptr, *dy = nullptr;
  if (tirx_runtime_stream_create(rt.get(), &stream) != TIRX_OK)
    return fail("tirx_runtime_stream_create");
  if (tirx_runtime_alloc(rt.get(), bytes, &dx) != TIRX_OK ||
      tirx_runtime_alloc(rt.get(), bytes, &dy) != TIRX_OK)
    return fail("tirx_runtime_alloc");
  if (tirx_runtime_copy_async(rt.get(), dx, hx.data(), bytes, TIRX_COPY_HOST_TO_DEVICE, stream) !=
          TIRX_OK ||
      tirx_runtime_copy_async(rt.get(), dy, hy.data(), bytes, TIRX_COPY_HOST_TO_DEVICE, stream) !=
          TIRX_OK)
    return fail("tirx_runtime_copy_async");
  const int64_t shape[2] = {rows, cols};
  const tirx_arg args[] = {tirx_arg_i64(rows), tirx_arg_i64(cols), tirx_arg_f32(2.0f),
                           tirx_arg_tensor(dx, TIRX_F32, 2, shape, nullptr),
                           tirx_arg_tensor(dy, TIRX_F32, 2, shape, nullptr)};
  tirx_launch_info info{};
  info.size = sizeof info;
  if (tirx_launch_ex(rt.get(), k.get(), args, 5, stream, &info) != TIRX_OK)
    return fail("tirx_launch_ex");
  static const char *const sources[] = {"memory", "disk cache", "compile"};
  std::printf("launch: from %s in %.2f ms\n", sources[info.source], info.millis);
  if (tirx_runtime_copy_async(rt.get(), out.data(), dy, bytes, TIRX_COPY_DEVICE_TO_HOST, stream) !=
          TIRX_OK ||
      tirx_runtime_synchronize(rt.get(), stream) != TIRX_OK)
    return fail("copy back");
  for (size_t i = 0; i < n; i++)
    if (std::fabs(out[i] - (2.0f * hx[i] + hy[i])) > 1e-5f) {
      std::fprintf(stderr, "cpp_host: y[%zu] = %g, want %g\n", i, double(out[i]),
                   double(2.0f * hx[i] + hy[i]));
      return 1;
    }
  tirx_runtime_free(rt.get(), dx);
  tirx_runtime_free(rt.get(), dy);
  tirx_runtime_stream_destroy(rt.get(), stream);
  std::printf("ok: %lld x %lld elements verified\n", (long long)rows, (long long)cols);
  return 0;
}
