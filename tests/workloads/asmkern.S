/* asmkern.S - two assembly kernels without call frame information (no .cfi directives, as OpenBLAS's
 * and MKL's are), for the prologue unwinding tests: each spins RDI rounds and uses rbp as a general
 * register, so neither frame pointers nor .eh_frame lead out of it.
 *   asm_sub_kernel:  OpenBLAS's PROLOGUE: sub $N, %rsp, then callee-saved registers stored with mov.
 *   asm_push_kernel: pushes of callee-saved registers, then sub $N, %rsp. */
	.text

	.globl	asm_sub_kernel
	.type	asm_sub_kernel, @function
asm_sub_kernel:
	sub	$0x48, %rsp
	mov	%rbx, (%rsp)
	mov	%rbp, 8(%rsp)
	mov	%r12, 0x10(%rsp)
	xor	%eax, %eax
	mov	%rdi, %rbp
1:	add	%rbp, %rax
	rol	$7, %rax
	xor	$0x5a5a, %rax
	dec	%rbp
	jnz	1b
	mov	(%rsp), %rbx
	mov	8(%rsp), %rbp
	mov	0x10(%rsp), %r12
	add	$0x48, %rsp
	ret
	.size	asm_sub_kernel, .-asm_sub_kernel

	.globl	asm_push_kernel
	.type	asm_push_kernel, @function
asm_push_kernel:
	push	%rbp
	push	%rbx
	push	%r12
	sub	$0x20, %rsp
	xor	%eax, %eax
	mov	%rdi, %rbp
1:	add	%rbp, %rax
	ror	$5, %rax
	xor	$0x3c3c, %rax
	dec	%rbp
	jnz	1b
	add	$0x20, %rsp
	pop	%r12
	pop	%rbx
	pop	%rbp
	ret
	.size	asm_push_kernel, .-asm_push_kernel

	.section .note.GNU-stack, "", @progbits
