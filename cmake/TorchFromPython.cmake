# libtorch from a Python installation's torch package: PyPI's wheel (CUDA-enabled, with Gloo
# and NCCL), which scripts/install-deps.sh puts into HyperPipe's virtual environment.
#
# HYPERPIPE_PYTHON picks the Python. Unset, it is the HYPERPIPE_PYTHON environment variable,
# else the environment's python ($HYPERPIPE_VENV, else ~/.cache/hyperpipe/venv: the same
# place as scripts/torch_env.sh), else python3 on PATH. Sets Torch_FOUND, TORCH_LIBRARIES,
# TORCH_CXX_FLAGS (find_package(Torch)) and HYPERPIPE_TORCH_CUDA (a CUDA build of libtorch).

# The oldest libtorch the runtime builds against: TCPStoreOptions::masterListenFd (the store
# bound to MASTER_ADDR's interface only) came with 2.3.
set(HYPERPIPE_MIN_TORCH_VERSION 2.3)

set(HYPERPIPE_PYTHON "" CACHE FILEPATH "Python whose torch package provides libtorch")
if(NOT HYPERPIPE_PYTHON)
  if(DEFINED ENV{HYPERPIPE_PYTHON} AND NOT "$ENV{HYPERPIPE_PYTHON}" STREQUAL "")
    set(_hyperpipe_python "$ENV{HYPERPIPE_PYTHON}")
  else()
    if(DEFINED ENV{HYPERPIPE_VENV} AND NOT "$ENV{HYPERPIPE_VENV}" STREQUAL "")
      set(_hyperpipe_venv "$ENV{HYPERPIPE_VENV}")
    elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
      set(_hyperpipe_venv "$ENV{XDG_CACHE_HOME}/hyperpipe/venv")
    else()
      set(_hyperpipe_venv "$ENV{HOME}/.cache/hyperpipe/venv")
    endif()
    if(EXISTS "${_hyperpipe_venv}/bin/python")
      set(_hyperpipe_python "${_hyperpipe_venv}/bin/python")
    else()
      find_program(_hyperpipe_python NAMES python3)
    endif()
  endif()
  set(HYPERPIPE_PYTHON "${_hyperpipe_python}" CACHE FILEPATH
      "Python whose torch package provides libtorch" FORCE)
endif()

set(Torch_FOUND FALSE)
set(HYPERPIPE_TORCH_CUDA FALSE)
if(CMAKE_DISABLE_FIND_PACKAGE_Torch)
  return()
endif()

execute_process(
  COMMAND "${HYPERPIPE_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
  RESULT_VARIABLE _torch_status
  OUTPUT_VARIABLE _torch_prefix
  ERROR_VARIABLE _torch_error
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _torch_status EQUAL 0)
  string(REGEX MATCH "[^\n]*\n?$" _torch_error_line "${_torch_error}")
  message(WARNING
    "libtorch not found: ${HYPERPIPE_PYTHON} cannot import torch (${_torch_error_line}). "
    "Run scripts/install-deps.sh, or set HYPERPIPE_PYTHON to a Python with torch "
    ">= ${HYPERPIPE_MIN_TORCH_VERSION}. Building without the runtime (train, launch, profile).")
  return()
endif()

# No kernels of ours are compiled: the architecture list only settles libtorch's own CUDA
# setup, which otherwise looks for a GPU to ask (none on a build machine). 9.0 is Hopper.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "9.0")
endif()
# Both the package's cmake folder and its root go first on the prefix path: torch's config
# files look for Caffe2's and for the libraries on the default path before their own
# folders, where another libtorch (Debian's libtorch-dev) would be found first.
# Only for this search: the package's include folder holds libraries of its own (fmt,
# pybind11) that no other search may find.
get_filename_component(_torch_root "${_torch_prefix}/../.." ABSOLUTE)
set(_prefix_path_before "${CMAKE_PREFIX_PATH}")
list(PREPEND CMAKE_PREFIX_PATH "${_torch_prefix}" "${_torch_root}")
find_package(Torch ${HYPERPIPE_MIN_TORCH_VERSION} CONFIG)
set(CMAKE_PREFIX_PATH "${_prefix_path_before}")
if(NOT Torch_FOUND)
  message(WARNING "libtorch not found under ${_torch_prefix} (torch >= "
                  "${HYPERPIPE_MIN_TORCH_VERSION} needed): building without the runtime")
  return()
endif()
# libtorch's ProcessGroupGloo.hpp includes Gloo's headers, which the wheel leaves out. The
# runtime touches Gloo only through pointers (devices, contexts), whose layout no Gloo
# version changes, so another release's declarations do: Debian's libgloo-dev (its library
# is not linked; libtorch carries its own Gloo).
find_path(HYPERPIPE_GLOO_INCLUDE gloo/algorithm.h)
if(NOT HYPERPIPE_GLOO_INCLUDE)
  message(WARNING "libtorch found, but not Gloo's headers (gloo/algorithm.h), which its "
                  "ProcessGroupGloo.hpp includes and PyPI's wheel does not ship: install "
                  "libgloo-dev (scripts/install-deps.sh). Building without the runtime.")
  set(Torch_FOUND FALSE)
  return()
endif()
if(TARGET torch_cuda)
  set(HYPERPIPE_TORCH_CUDA TRUE)
  # libtorch_cuda needs the CUDA libraries the wheel came with (the nvidia-* packages beside
  # it: NCCL, cuBLAS, cuDNN, …), which its own rpath finds at run time. The linker looks on
  # the executables' rpath first, where libtorch's CMake files put the machine's toolkit
  # (/usr/local/cuda/lib: an older NCCL without the symbols this libtorch calls): point it
  # at the wheel's.
  file(GLOB _wheel_cuda_libraries LIST_DIRECTORIES true "${_torch_root}/../nvidia/*/lib")
  if(_wheel_cuda_libraries)
    string(JOIN ":" _rpath_link ${_wheel_cuda_libraries})
    add_link_options("LINKER:-rpath-link,${_rpath_link}")
  endif()
endif()

file(STRINGS "${PROJECT_SOURCE_DIR}/scripts/requirements-torch.txt" _torch_pin
     REGEX "^torch==")
string(REGEX REPLACE "^torch==" "" _torch_pin "${_torch_pin}")
message(STATUS "libtorch ${Torch_VERSION} from ${HYPERPIPE_PYTHON} "
               "(CUDA and NCCL: ${HYPERPIPE_TORCH_CUDA}; pinned: ${_torch_pin})")
if(NOT Torch_VERSION VERSION_EQUAL _torch_pin)
  message(STATUS "libtorch ${Torch_VERSION} is not the pinned ${_torch_pin} "
                 "(scripts/requirements-torch.txt): CI tests the pinned one")
endif()

# The wheel's include folder carries fmt 12's headers, and as a -isystem folder it comes
# before the system's: our code and spdlog (Debian's, built against the system's fmt 9)
# would compile against one fmt and link another. A folder holding nothing but a link to
# the fmt that fmt::fmt names goes first for every target (-I folders precede -isystem
# ones). None of the torch headers the runtime includes reaches fmt itself.
get_target_property(_fmt_include fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
list(GET _fmt_include 0 _fmt_include)
set(HYPERPIPE_FMT_FIRST "${PROJECT_BINARY_DIR}/fmt-before-torch")
file(MAKE_DIRECTORY "${HYPERPIPE_FMT_FIRST}")
file(CREATE_LINK "${_fmt_include}/fmt" "${HYPERPIPE_FMT_FIRST}/fmt" SYMBOLIC)
include_directories(BEFORE "${HYPERPIPE_FMT_FIRST}")
