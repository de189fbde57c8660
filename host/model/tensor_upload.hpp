#pragma once
// One tensor of an ordinary (F32/F16/BF16) safetensors checkpoint on the device in a
// WeightFormat: dense tensors as fp32 or fp16, matrices quantized at load time to q8_0/q4_0
// row band by row band. Read a bounded chunk at a time, checked for values fp16 cannot hold
// and (check_finite) for NaN and infinity, each error naming the file, the tensor and the
// element. The encoder (encoder.hpp) loads its weights through it; the decoders' Uploader
// (weights.cpp) does the same for BLOOM and MPT and also reads quantized checkpoints.

#include "host/io/safetensors.hpp"
#include "host/quant/quant_format.hpp"
#include "host/spec/model_tensors.hpp"
#include "runtime/context.hpp"

#include <string>

namespace vkf {

struct UploadedTensor {
    Buffer values;  // quantized: the values plane
    Buffer scales;  // quantized: the fp16 scales; !valid() otherwise
};

// `stored_name` is the tensor's name in the checkpoint, `expected` its shape and role
// (quantized_role(role) decides whether format.quant applies to it). The tensor's shape must
// already have been checked against `expected`.
UploadedTensor upload_checkpoint_tensor(Context& ctx, const ShardedCheckpoint& checkpoint,
                                        const std::string& stored_name, const ExpectedTensor& expected,
                                        WeightFormat format, bool check_finite);

}  // namespace vkf
