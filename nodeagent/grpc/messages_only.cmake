# cmake -DIN=x.proto -DOUT=dir/x.proto -P messages_only.cmake: copies a .proto without its service
# blocks, for protoc-c. Its service stubs are for protobuf-c-rpc, which fracgpu does not use (the
# transport is server.h/client.h and method paths are strings), and they do not even compile here:
# the kubelet's Registration.Register becomes a member named `register`, a C keyword.
file(STRINGS ${IN} lines)
set(text "")
set(in_service FALSE)
foreach(line IN LISTS lines)
  if(line MATCHES "^service ")
    set(in_service TRUE)
  endif()
  if(NOT in_service)
    string(APPEND text "${line}\n")
  endif()
  if(in_service AND line STREQUAL "}")
    set(in_service FALSE)
  endif()
endforeach()
file(WRITE ${OUT}.part "${text}")
file(RENAME ${OUT}.part ${OUT})
