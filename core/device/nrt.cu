// cujit's NRT implementation, compiled by NVRTC (cujit::nrt::library) once per
// architecture and options, and linked into kernels that need it.
#include "cujit/nrt.cuh"

extern "C" __device__ NRT_MemSysStats cujit_nrt_stats = {0, 0, 0, 0};
// Statistics cost an atomic per event: off unless the host turns them on.
extern "C" __device__ int cujit_nrt_stats_enabled = 0;

namespace {

__device__ void count(unsigned long long* counter) {
  if (*static_cast<volatile int*>(&cujit_nrt_stats_enabled) != 0) atomicAdd(counter, 1ull);
}

__device__ unsigned long long* refcount(NRT_MemInfo* mi) {
  static_assert(sizeof(size_t) == sizeof(unsigned long long), "64-bit size_t expected");
  return reinterpret_cast<unsigned long long*>(&mi->refct);
}

// Destructor of NRT_MemInfo_new_varsize: the data was NRT_Allocate'd.
__device__ void free_varsize(void* data, size_t, void*) { NRT_Free(data); }

// Destructor of NRT_MemInfo_new_varsize_dtor: the user's destructor (kept in dtor_info),
// then the bytes.
__device__ void free_varsize_with_user_dtor(void* data, size_t size, void* info) {
  reinterpret_cast<NRT_dtor_function>(info)(data, size, nullptr);
  NRT_Free(data);
}

}  // namespace

extern "C" __device__ void* NRT_Allocate(size_t size) {
  void* ptr = malloc(size);
  if (ptr != nullptr) count(&cujit_nrt_stats.alloc);
  return ptr;
}

extern "C" __device__ void* NRT_Allocate_External(size_t size, NRT_ExternalAllocator* allocator) {
  if (allocator == nullptr || allocator->malloc == nullptr) return NRT_Allocate(size);
  void* ptr = allocator->malloc(size, allocator->opaque_data);
  if (ptr != nullptr) count(&cujit_nrt_stats.alloc);
  return ptr;
}

extern "C" __device__ void NRT_Free(void* ptr) {
  if (ptr == nullptr) return;
  free(ptr);
  count(&cujit_nrt_stats.free);
}

extern "C" __device__ void NRT_MemInfo_init(NRT_MemInfo* mi, void* data, size_t size,
                                            NRT_dtor_function dtor, void* dtor_info) {
  mi->refct = 1;
  mi->dtor = dtor;
  mi->dtor_info = dtor_info;
  mi->data = data;
  mi->size = size;
  mi->external_allocator = nullptr;
  count(&cujit_nrt_stats.mi_alloc);
}

extern "C" __device__ NRT_MemInfo* NRT_MemInfo_new(void* data, size_t size,
                                                   NRT_dtor_function dtor, void* dtor_info) {
  auto* mi = static_cast<NRT_MemInfo*>(NRT_Allocate(sizeof(NRT_MemInfo)));
  if (mi != nullptr) NRT_MemInfo_init(mi, data, size, dtor, dtor_info);
  return mi;
}

extern "C" __device__ NRT_MemInfo* NRT_MemInfo_new_varsize(size_t size) {
  void* data = NRT_Allocate(size);
  if (data == nullptr) return nullptr;
  NRT_MemInfo* mi = NRT_MemInfo_new(data, size, free_varsize, nullptr);
  if (mi == nullptr) NRT_Free(data);
  return mi;
}

extern "C" __device__ NRT_MemInfo* NRT_MemInfo_new_varsize_dtor(size_t size,
                                                                NRT_dtor_function dtor) {
  NRT_MemInfo* mi = NRT_MemInfo_new_varsize(size);
  if (mi != nullptr && dtor != nullptr) {
    mi->dtor = free_varsize_with_user_dtor;
    mi->dtor_info = reinterpret_cast<void*>(dtor);
  }
  return mi;
}

extern "C" __device__ NRT_MemInfo* NRT_MemInfo_alloc_aligned(size_t size, unsigned int align) {
  if (align == 0) align = 1;
  // A size so large that the block's size would wrap around is refused like any other
  // allocation the heap cannot hold, instead of allocating a few bytes and writing past them.
  if (size > ~size_t{0} - sizeof(NRT_MemInfo) - align) return nullptr;
  // MemInfo first, then padding up to the alignment, then the data: one allocation, so
  // destroying the MemInfo frees the data too (no destructor needed).
  char* block = static_cast<char*>(NRT_Allocate(sizeof(NRT_MemInfo) + size + align));
  if (block == nullptr) return nullptr;
  const size_t start = reinterpret_cast<size_t>(block + sizeof(NRT_MemInfo));
  const size_t aligned = (start + align - 1) / align * align;
  auto* mi = reinterpret_cast<NRT_MemInfo*>(block);
  NRT_MemInfo_init(mi, reinterpret_cast<void*>(aligned), size, nullptr, nullptr);
  return mi;
}

extern "C" __device__ void* NRT_MemInfo_data_fast(NRT_MemInfo* mi) { return mi->data; }

extern "C" __device__ void NRT_MemInfo_call_dtor(NRT_MemInfo* mi) {
  if (mi->dtor != nullptr) mi->dtor(mi->data, mi->size, mi->dtor_info);
  NRT_MemInfo_destroy(mi);
}

extern "C" __device__ void NRT_MemInfo_destroy(NRT_MemInfo* mi) {
  NRT_Free(mi);
  count(&cujit_nrt_stats.mi_free);
}

extern "C" __device__ void NRT_dealloc(NRT_MemInfo* mi) { NRT_MemInfo_call_dtor(mi); }

extern "C" __device__ void NRT_incref(NRT_MemInfo* mi) {
  if (mi == nullptr) return;
  atomicAdd(refcount(mi), 1ull);
}

extern "C" __device__ void NRT_decref(NRT_MemInfo* mi) {
  if (mi == nullptr) return;
  // Release: this thread's writes to the data happen before any destructor reads them.
  __threadfence();
  // One fetch-and-subtract: exactly one thread sees the count go from 1 to 0. Reading
  // the count after a separate decrement would let two threads both see zero.
  const unsigned long long before = atomicAdd(refcount(mi), ~0ull);
  if (before == 1) {
    __threadfence();  // acquire: every other holder's writes are visible to the destructor
    NRT_dealloc(mi);
  }
}
