# CMAKE_PROJECT_INCLUDE hook used by tools/setup_venv.sh to build interface packages against
# ROS 2 installed from PyPI wheels.
#
# The wheels' exported `<pkg>::<pkg>__rosidl_generator_py` targets carry include directories
# baked in on the wheel build machine (`/opt/python/cpXY-cpXY/include/pythonX.Y`,
# `.../site-packages/numpy/_core/include`). CMake refuses to generate when an imported target
# names a path that does not exist. At the end of configure (deferred, so every find_package()
# has run) this rewrites such paths to this interpreter's Python and NumPy include directories.
# Installed files are not touched.

get_property(_ffsim_fix_registered GLOBAL PROPERTY FFSIM_FIX_WHEEL_INCLUDE_DIRS_REGISTERED)
if(_ffsim_fix_registered)
  return()
endif()
set_property(GLOBAL PROPERTY FFSIM_FIX_WHEEL_INCLUDE_DIRS_REGISTERED TRUE)

function(_ffsim_collect_imported_targets dir out_var)
  get_property(_targets DIRECTORY "${dir}" PROPERTY IMPORTED_TARGETS)
  get_property(_subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    _ffsim_collect_imported_targets("${_sub}" _sub_targets)
    list(APPEND _targets ${_sub_targets})
  endforeach()
  set(${out_var} ${_targets} PARENT_SCOPE)
endfunction()

function(_ffsim_fix_wheel_include_dirs)
  if(DEFINED Python3_EXECUTABLE)
    set(_python "${Python3_EXECUTABLE}")
  else()
    find_program(_python NAMES python3 python REQUIRED)
  endif()
  execute_process(
    COMMAND "${_python}" -c
      "import sysconfig, numpy; print(sysconfig.get_paths()['include']); print(numpy.get_include())"
    OUTPUT_VARIABLE _out
    RESULT_VARIABLE _rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "fix_wheel_include_dirs: cannot query include dirs from ${_python}")
  endif()
  string(REPLACE "\n" ";" _out "${_out}")
  list(GET _out 0 _py_include)
  list(GET _out 1 _np_include)

  _ffsim_collect_imported_targets("${CMAKE_SOURCE_DIR}" _targets)
  foreach(_target IN LISTS _targets)
    get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      continue()
    endif()
    set(_new_dirs "")
    set(_changed FALSE)
    foreach(_dir IN LISTS _dirs)
      if(NOT _dir MATCHES "^\\$<" AND NOT EXISTS "${_dir}")
        if(_dir MATCHES "/include/python3\\.[0-9]+$")
          set(_dir "${_py_include}")
          set(_changed TRUE)
        elseif(_dir MATCHES "/numpy/(_core|core)/include$")
          set(_dir "${_np_include}")
          set(_changed TRUE)
        endif()
      endif()
      list(APPEND _new_dirs "${_dir}")
    endforeach()
    if(_changed)
      list(REMOVE_DUPLICATES _new_dirs)
      set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_new_dirs}")
      message(STATUS "fix_wheel_include_dirs: rewrote include dirs of ${_target}")
    endif()
  endforeach()
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ffsim_fix_wheel_include_dirs)
