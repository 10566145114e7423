# Writes OUTPUT: a C++ file defining `const char* const VARIABLE` holding the
# text of INPUT, so the compiler carries the runtime texts it pastes into
# generated sources and needs no installed header at run time.
file(READ "${INPUT}" content)
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by cmake/embed_file.cmake; do not edit.\n")
file(APPEND "${OUTPUT}" "namespace plait {\nextern const char* const ${VARIABLE};\nconst char* const ${VARIABLE} = R\"plait_embed(")
file(APPEND "${OUTPUT}" "${content}")
file(APPEND "${OUTPUT}" ")plait_embed\";\n}  // namespace plait\n")
