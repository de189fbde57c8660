# cmake -DID=c_identifier -DNAME=display_name -DSPV=file.spv -DOUT=file.cpp -P EmbedSpirv.cmake
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(n EQUAL 0 OR NOT rem EQUAL 0)
  message(FATAL_ERROR "${SPV} is not a SPIR-V module (size not a multiple of 4)")
endif()
# SPIR-V words are little-endian on disk: reverse each group of four bytes.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n" words "${words}")
math(EXPR count "${n} / 8")
file(WRITE ${OUT}.tmp
"// Generated from ${SPV}; do not edit.
#include \"runtime/spirv.hpp\"
namespace {
const std::uint32_t words[${count}] = {
${words}
};
} // namespace
namespace vkf::shaders::embedded {
extern const SpirvCode ${ID};
const SpirvCode ${ID}{\"${NAME}\", words};
} // namespace vkf::shaders::embedded
")
file(RENAME ${OUT}.tmp ${OUT})
