// ModelOptions: how a checkpoint is placed and written. One struct for the model component.
#pragma once

#include <cstdint>
#include <string>

namespace musacoder::model {

struct ModelOptions {
  // "cpu", "cuda", "cuda:1", ... Parsed by c10::Device; a CUDA device needs a CUDA build of libtorch.
  std::string device = "cpu";
  // "auto" (bfloat16 on CUDA, float32 on CPU), "bfloat16", "float16" or "float32": the parameter dtype.
  std::string dtype = "auto";
  // save_pretrained: above this many bytes of tensors, write shards plus model.safetensors.index.json.
  uint64_t max_shard_bytes = 5ull << 30;
  // save_pretrained: the dtype written ("" keeps the parameters' dtype).
  std::string save_dtype = "";
};

}  // namespace musacoder::model
