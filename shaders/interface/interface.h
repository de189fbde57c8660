// The macros behind shaders/interface/*.h: each of those headers is read both by GLSL (the
// .comp files, through GL_GOOGLE_include_directive) and by C++ (host/ops, apps/bench), so
// that a kernel family's flag bits, specialization-constant ids and push-constant block are
// written once. Only what both preprocessors share is used outside the language branches
// below: #define, function-like macros, macros passed as arguments, /* */ comments and line
// continuations (no # stringizing, no #pragma once).
//
// Flag bits are plain defines, VKF_<FAMILY>_FLAG_<NAME> (an unsigned literal), tested in
// GLSL and set in C++. Specialization-constant ids are VKF_<FAMILY>_SPEC_<NAME>, used in
// layout(constant_id = ...) and in the C++ SpecConstant lists; ids 0-2 are the workgroup
// size (runtime/pipeline.hpp).
//
// A push-constant block is an X-macro field list, F(type, name) per member, type uint or
// float (the only types push constants use so far):
//
//     #define VKF_FOO_PUSH(F) F(uint, count) F(float, scale)
//     VKF_PUSH_CONSTANTS(FooParams, FooPush, VKF_FOO_PUSH)
//
// GLSL gets   layout(push_constant) uniform FooParams { uint count; float scale; } params;
// C++ gets    struct vkf::FooPush { std::uint32_t count; float scale; ... };
// with FooPush::layout, the PushConstantLayout (runtime/push_constants.hpp) that pipeline
// creation compares with the block in the SPIR-V member by member.
#ifndef VKF_INTERFACE_H
#define VKF_INTERFACE_H

#ifdef __cplusplus

#include "runtime/push_constants.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

#define VKF_CPP_TYPE_uint std::uint32_t
#define VKF_CPP_TYPE_float float
static_assert(sizeof(float) == 4, "GLSL float is 32 bits");

#define VKF_PUSH_FIELD_(type, name) VKF_CPP_TYPE_##type name;
#define VKF_PUSH_COUNT_(type, name) +1
// Expanded where `Self` names the struct (see VKF_PUSH_CONSTANTS).
#define VKF_PUSH_MEMBER_(type, name)                                                          \
    ::vkf::PushConstantMember{#name, #type, static_cast<std::uint32_t>(offsetof(Self, name)), \
                              static_cast<std::uint32_t>(sizeof(VKF_CPP_TYPE_##type))},

// The member table is defined after the struct because offsetof needs the complete type;
// the static members take no part in aggregate (designated) initialization.
#define VKF_PUSH_CONSTANTS(block, cpp_struct, FIELDS)                                                    \
    namespace vkf {                                                                                      \
    struct cpp_struct {                                                                                  \
        FIELDS(VKF_PUSH_FIELD_)                                                                          \
        static constexpr std::size_t member_count = 0 FIELDS(VKF_PUSH_COUNT_);                           \
        static const std::array<PushConstantMember, member_count> members;                               \
        static const PushConstantLayout layout;                                                          \
    };                                                                                                   \
    inline constexpr std::array<PushConstantMember, cpp_struct::member_count> cpp_struct::members = [] { \
        using Self = cpp_struct;                                                                         \
        return std::array<PushConstantMember, Self::member_count>{{FIELDS(VKF_PUSH_MEMBER_)}};           \
    }();                                                                                                 \
    inline constexpr PushConstantLayout cpp_struct::layout{#cpp_struct, #block, sizeof(cpp_struct),      \
                                                           cpp_struct::members};                         \
    }

#else  // GLSL

#define VKF_PUSH_FIELD_(type, name) type name;
// Every shader names its push-constant block `params`.
// clang-format off
#define VKF_PUSH_CONSTANTS(block, cpp_struct, FIELDS) \
    layout(push_constant) uniform block {             \
        FIELDS(VKF_PUSH_FIELD_)                       \
    } params;
// clang-format on

#endif

#endif
