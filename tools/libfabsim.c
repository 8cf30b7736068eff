/* libfabsim: stub, see fabsim.h */
