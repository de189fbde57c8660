# Shader build: every kernel family (one .comp) is compiled by glslangValidator once per
# combination of its defines, checked by spirv-val and embedded as a generated C++ array; a
# generated table lists every variant by family and defines for shaders::variant()
# (shaders/variants.hpp). glslang's depfile lets Ninja rebuild exactly the variants whose
# .comp or included files changed.

set(VKF_SPIRV_TARGET_ENV vulkan1.1)
# SPIR-V does not depend on the C++ compiler, its flags or the target architecture: a second
# build of the same sources (the sanitizer and aarch64 legs of CI) may take the modules of a
# first one instead of compiling and validating them again. VKF_SPIRV_DIR names that build's
# shaders/spv folder; the `vkf_spirv` target brings it up to date (scripts/test.sh does both).
set(VKF_SPIRV_DIR "" CACHE PATH "shaders/spv of another build of these sources, whose SPIR-V this build copies")
set(VKF_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/EmbedSpirv.cmake)

# vkf_shader_family(<family> SOURCE <file.comp>
#                   [ONE_OF <alternative>...]... [OPTION <define>]... [EXCLUDE <define+define...>...])
#
# Declares the variant matrix of one kernel family: the cross product of its axes.
#   ONE_OF a b c    an axis whose variants take exactly one of the alternatives; "" is the
#                   variant without any of them, and an alternative may be several defines
#                   joined by '+' (ROWDOT+WIDE64).
#   OPTION X        an axis of two: without X and with X.
#   EXCLUDE A+B     no variant that has all of A and B (combinations the kernel lacks).
# A variant is named family[DEFINE,...] (its defines in axis order), or family alone.
function(vkf_shader_family family)
  set(source "")
  set(axes "")      # one element per axis: its alternatives joined by '|'
  set(excludes "")
  set(mode "")
  set(alternatives -1) # alternatives of the ONE_OF axis being read; -1: none open
  foreach(arg IN LISTS ARGN)
    if(arg MATCHES "^(SOURCE|ONE_OF|OPTION|EXCLUDE)$")
      if(alternatives GREATER_EQUAL 0)
        list(APPEND axes "${axis}")
        set(alternatives -1)
      endif()
      set(mode ${arg})
      if(mode STREQUAL "ONE_OF")
        set(alternatives 0)
        set(axis "")
      endif()
      continue()
    endif()
    if(mode STREQUAL "SOURCE")
      set(source ${arg})
    elseif(mode STREQUAL "ONE_OF")
      if(alternatives EQUAL 0)
        set(axis "${arg}")
      else()
        string(APPEND axis "|${arg}")
      endif()
      math(EXPR alternatives "${alternatives} + 1")
    elseif(mode STREQUAL "OPTION")
      list(APPEND axes "|${arg}")
    elseif(mode STREQUAL "EXCLUDE")
      list(APPEND excludes ${arg})
    else()
      message(FATAL_ERROR "vkf_shader_family(${family}): '${arg}' outside SOURCE, ONE_OF, OPTION or EXCLUDE")
    endif()
  endforeach()
  if(alternatives GREATER_EQUAL 0)
    list(APPEND axes "${axis}")
  endif()
  if(NOT source)
    message(FATAL_ERROR "vkf_shader_family(${family}) needs SOURCE")
  endif()
  if(NOT family MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "vkf_shader_family: '${family}' is not a lower-case identifier")
  endif()
  get_property(families GLOBAL PROPERTY VKF_SHADER_FAMILIES)
  if(family IN_LIST families)
    message(FATAL_ERROR "vkf_shader_family(${family}) is declared twice")
  endif()
  set_property(GLOBAL APPEND PROPERTY VKF_SHADER_FAMILIES ${family})

  # Each variant as family+DEFINE+DEFINE..., never an empty string (CMake lists drop those).
  set(variants ${family})
  foreach(axis IN LISTS axes)
    string(REPLACE "|" ";" alts "${axis}")
    set(next "")
    foreach(v IN LISTS variants)
      foreach(alt IN LISTS alts)
        if(alt STREQUAL "")
          list(APPEND next ${v})
        else()
          list(APPEND next "${v}+${alt}")
        endif()
      endforeach()
    endforeach()
    set(variants ${next})
  endforeach()

  foreach(v IN LISTS variants)
    string(REPLACE "+" ";" defines "${v}")
    list(REMOVE_AT defines 0)
    set(skip FALSE)
    foreach(ex IN LISTS excludes)
      string(REPLACE "+" ";" ex_defines "${ex}")
      set(all TRUE)
      foreach(d IN LISTS ex_defines)
        if(NOT d IN_LIST defines)
          set(all FALSE)
        endif()
      endforeach()
      if(all)
        set(skip TRUE)
      endif()
    endforeach()
    if(skip)
      continue()
    endif()
    set(unique ${defines})
    list(REMOVE_DUPLICATES unique)
    list(LENGTH unique unique_count)
    list(LENGTH defines define_count)
    if(NOT unique_count EQUAL define_count)
      message(FATAL_ERROR "vkf_shader_family(${family}): variant ${v} names a define twice")
    endif()
    foreach(d IN LISTS defines)
      if(NOT d MATCHES "^[A-Z][A-Z0-9_]*$")
        message(FATAL_ERROR "vkf_shader_family(${family}): '${d}' is not an upper-case define name")
      endif()
    endforeach()
    string(REPLACE "+" "__" id "${v}")
    if(define_count GREATER 0)
      list(JOIN defines "," csv)
      set(display "${family}[${csv}]")
    else()
      set(csv "")
      set(display "${family}")
    endif()
    vkf_shader_variant_(${id} "${display}" ${source} "${defines}")
    set_property(GLOBAL APPEND PROPERTY VKF_SHADER_VARIANTS "${family}|${id}|${csv}")
  endforeach()
endfunction()

# Compiles, validates and embeds one variant; `id` names its files and C++ symbol.
function(vkf_shader_variant_ id display source defines)
  get_filename_component(src ${source} ABSOLUTE)
  set(spv ${CMAKE_CURRENT_BINARY_DIR}/spv/${id}.spv)
  set(cpp ${CMAKE_CURRENT_BINARY_DIR}/gen/${id}.cpp)
  set(flags "")
  foreach(d IN LISTS defines)
    list(APPEND flags -D${d})
  endforeach()
  if(VKF_SPIRV_DIR)
    add_custom_command(
      OUTPUT ${spv}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/spv
      COMMAND ${CMAKE_COMMAND} -E copy ${VKF_SPIRV_DIR}/${id}.spv ${spv}
      DEPENDS ${VKF_SPIRV_DIR}/${id}.spv
      COMMENT "SPIR-V ${display} from ${VKF_SPIRV_DIR}"
      VERBATIM)
  else()
    add_custom_command(
      OUTPUT ${spv}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/spv
      # -I: shaders include their family's interface as "interface/<family>.h".
      COMMAND ${VKF_GLSLANG} --quiet --target-env ${VKF_SPIRV_TARGET_ENV} -I${CMAKE_CURRENT_SOURCE_DIR} ${flags}
              --depfile ${spv}.d -o ${spv} ${src}
      COMMAND ${VKF_SPIRV_VAL} --target-env ${VKF_SPIRV_TARGET_ENV} ${spv}
      DEPENDS ${src}
      DEPFILE ${spv}.d
      COMMENT "GLSL ${display}"
      VERBATIM)
  endif()
  set_property(GLOBAL APPEND PROPERTY VKF_SHADER_SPV ${spv})
  add_custom_command(
    OUTPUT ${cpp}
    COMMAND ${CMAKE_COMMAND} -DID=${id} -DNAME=${display} -DSPV=${spv} -DOUT=${cpp} -P ${VKF_EMBED_SCRIPT}
    DEPENDS ${spv} ${VKF_EMBED_SCRIPT}
    COMMENT "Embedding ${display}"
    VERBATIM)
  set_property(GLOBAL APPEND PROPERTY VKF_SHADER_CPP ${cpp})
endfunction()

# Builds the library of every declared variant, with the table shaders::all_variants()
# returns and the hand-written lookup (`sources`).
function(vkf_shader_library target)
  get_property(cpps GLOBAL PROPERTY VKF_SHADER_CPP)
  get_property(records GLOBAL PROPERTY VKF_SHADER_VARIANTS)
  set(externs "")
  set(define_arrays "")
  set(rows "")
  foreach(r IN LISTS records)
    string(REPLACE "|" ";" fields "${r}")
    list(GET fields 0 family)
    list(GET fields 1 id)
    list(LENGTH fields n)
    set(csv "")
    if(n GREATER 2)
      list(GET fields 2 csv)
    endif()
    string(APPEND externs "extern const SpirvCode ${id};\n")
    if(csv STREQUAL "")
      string(APPEND rows "    {\"${family}\", {}, &embedded::${id}},\n")
    else()
      string(REPLACE "," "\", \"" quoted "${csv}")
      string(APPEND define_arrays "constexpr std::string_view ${id}_defines[] = {\"${quoted}\"};\n")
      string(APPEND rows "    {\"${family}\", ${id}_defines, &embedded::${id}},\n")
    endif()
  endforeach()
  set(table ${CMAKE_CURRENT_BINARY_DIR}/gen/shader_table.cpp)
  file(CONFIGURE OUTPUT ${table} CONTENT
"// Generated by cmake/VkfShaders.cmake from the families in shaders/CMakeLists.txt.
#include \"shaders/variants.hpp\"

namespace vkf::shaders {
namespace embedded {
@externs@} // namespace embedded

namespace {
@define_arrays@
constexpr ShaderVariant kVariants[] = {
@rows@};
} // namespace

std::span<const ShaderVariant> all_variants() { return kVariants; }

} // namespace vkf::shaders
" @ONLY)
  get_property(spvs GLOBAL PROPERTY VKF_SHADER_SPV)
  add_custom_target(vkf_spirv DEPENDS ${spvs})
  add_library(${target} STATIC ${cpps} ${table} ${ARGN})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} PUBLIC vkf_base)
endfunction()
